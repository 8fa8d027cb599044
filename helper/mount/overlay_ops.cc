#include "helper/mount/overlay_ops.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "helper/mount/child_process.h"
#include "helper/mount/mounthelper.h"
#include "helper/mount/thread_caps.h"
#include "services/common/persist_layout.h"
#include "services/common/log.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::mounthelper {
namespace {

constexpr auto kMountTimeout = std::chrono::seconds(20);
constexpr auto kExitTimeout = std::chrono::seconds(10);

dev_t DevOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_dev : 0;
}

// An error of the kernel overlay's set-up: UNIMPLEMENTED for what means
// "the kernel will not do this overlay here" (the caller may use
// fuse-overlayfs), the errno's status otherwise.
absl::Status KernelOverlayError(const std::string& what, int fs_fd, int err) {
  const std::string messages = fs_fd >= 0 ? FsContextMessages(fs_fd) : "";
  const std::string text = absl::StrCat("kernel overlayfs: ", what, ": ", std::strerror(err),
                                        messages.empty() ? "" : absl::StrCat(" (", messages, ")"));
  if (err == ENODEV || err == EPERM || err == EINVAL || err == EOPNOTSUPP || err == ENOSYS ||
      err == EXDEV) {
    return absl::UnimplementedError(text);
  }
  return absl::InternalError(text);
}

// Mounts the kernel's overlayfs at `o`'s merged directory through the
// descriptor-based mount API: every directory is given as the /proc/self/fd
// path of a descriptor overlay_paths.h opened and checked, and the new
// mount is moved onto the merged directory's own descriptor, so no path is
// looked up again. `userxattr` keeps overlayfs's own attributes in the
// user.overlay. namespace, rootful and rootless alike (a user namespace
// may not write trusted.*), so a layer reads the same in both; nodev: no
// device node on the layer opens.
absl::Status MountKernelOverlay(const fs::DirFd& lower, const CheckedOverlay& o) {
  const int raw = fsopen("overlay", FSOPEN_CLOEXEC);
  if (raw < 0) return KernelOverlayError("fsopen", -1, errno);
  fs::UniqueFd fs_fd(raw);
  const std::pair<const char*, std::string> strings[] = {
      {"source", "lazaret"},
      {"lowerdir", FdPath(lower.get())},
      {"upperdir", FdPath(o.changes.get())},
      {"workdir", FdPath(o.work.get())},
  };
  for (const auto& [key, value] : strings) {
    if (fsconfig(fs_fd.get(), FSCONFIG_SET_STRING, key, value.c_str(), 0) != 0) {
      return KernelOverlayError(key, fs_fd.get(), errno);
    }
  }
  if (fsconfig(fs_fd.get(), FSCONFIG_SET_FLAG, "userxattr", nullptr, 0) != 0) {
    return KernelOverlayError("userxattr", fs_fd.get(), errno);
  }
  {
    // The kernel's overlayfs acts on the upper layer with the credentials
    // of the thread that creates it (copy-up sets owners and modes, reads
    // files of any owner), so they must be in effect then, and only then.
    ThreadCapsInEffect caps(kDelegatedCapabilities);
    if (fsconfig(fs_fd.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
      return KernelOverlayError(absl::StrCat("creating the overlay of ", o.directory),
                                fs_fd.get(), errno);
    }
  }
  const int mnt = fsmount(fs_fd.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
  if (mnt < 0) return KernelOverlayError("fsmount", fs_fd.get(), errno);
  fs::UniqueFd mount_fd(mnt);
  if (move_mount(mount_fd.get(), "", o.merged.get(), "",
                 MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    return ErrnoStatus(absl::StrCat("mounting the overlay at ", o.paths.merged), errno);
  }
  return absl::OkStatus();
}

class SystemOverlayOps final : public OverlayOps {
 public:
  explicit SystemOverlayOps(CappedKind capped_kind) : capped_kind_(capped_kind) {}

  absl::StatusOr<fs::DirFd> MountImage(const std::string& image_id) override {
    LAZ_ASSIGN_OR_RETURN(std::string podman, FindProgram("podman"));
    LAZ_ASSIGN_OR_RETURN(std::string out, RunCapture({podman, "image", "mount", image_id}));
    // Podman may print warnings first; the mount point is the last line.
    std::vector<std::string> lines =
        absl::StrSplit(absl::StripAsciiWhitespace(out), '\n', absl::SkipEmpty());
    const std::string root =
        lines.empty() ? "" : std::string(absl::StripAsciiWhitespace(lines.back()));
    if (root.empty() || root[0] != '/') {
      (void)UnmountImage(image_id);
      return absl::InternalError(absl::StrCat("podman image mount ", image_id.substr(0, 12),
                                              " printed no mount point: ", out));
    }
    absl::StatusOr<fs::DirFd> dir = fs::DirFd::OpenTrusted(root);
    if (!dir.ok()) (void)UnmountImage(image_id);
    return dir;
  }

  absl::Status UnmountImage(const std::string& image_id) override {
    LAZ_ASSIGN_OR_RETURN(std::string podman, FindProgram("podman"));
    return RunCapture({podman, "image", "unmount", image_id}).status();
  }

  absl::StatusOr<FuseProcess> MountOverlay(const fs::DirFd& lower, const CheckedOverlay& o,
                                           OverlayDriver driver) override {
    if (IsMounted(o.paths.merged)) {
      return absl::FailedPreconditionError(absl::StrCat(
          o.paths.merged, " is already a mount point the helper does not know; unmount it"));
    }
    if (driver == OverlayDriver::kKernel) {
      LAZ_RETURN_IF_ERROR(MountKernelOverlay(lower, o));
      return FuseProcess{};
    }
    LAZ_ASSIGN_OR_RETURN(std::string fuse, FindProgram("fuse-overlayfs"));
    // writeback=0: with the kernel's writeback cache a write past the cap
    // succeeds and its ENOSPC comes only at close, which the sandbox does
    // not see (measured: dd exits 0, the data is lost); without it the
    // write itself fails, and a full layer can still delete files.
    // noacl: over fuse2fs (rootless) fuse-overlayfs's own ACL check fails
    // with EOPNOTSUPP in a directory of another uid, so the sandbox's root
    // could not open a file in its own 0711 directory (measured); gVisor
    // gives the sandbox no POSIX ACLs on these mounts either way.
    const std::vector<std::string> argv = {
        fuse, "-f", "-o",
        absl::StrCat("lowerdir=", FdPath(lower.get()), ",upperdir=", FdPath(o.changes.get()),
                     ",workdir=", FdPath(o.work.get()), ",writeback=0,noacl"),
        FdPath(o.merged.get())};
    const dev_t before = DevOf(o.paths.merged);
    LAZ_ASSIGN_OR_RETURN(
        Child c, Spawn(argv, false, {lower.get(), o.changes.get(), o.work.get(), o.merged.get()},
                       /*file_ops=*/true));
    const FuseProcess proc{c.pid, ProcessStartTime(c.pid)};
    const auto deadline = std::chrono::steady_clock::now() + kMountTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const dev_t now = DevOf(o.paths.merged);
      if (now != 0 && now != before) return proc;
      int ws = 0;
      if (waitpid(c.pid, &ws, WNOHANG) == c.pid) {
        return absl::InternalError(absl::StrCat(
            "fuse-overlayfs for ", o.directory, " exited before mounting ", o.paths.merged, " (",
            WIFEXITED(ws) ? absl::StrCat("status ", WEXITSTATUS(ws)) : "killed",
            "; its messages are in the supervisor's log)"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(c.pid, SIGKILL);
    WaitGone(c.pid, proc.start_time, kExitTimeout);
    return absl::DeadlineExceededError(
        absl::StrCat("fuse-overlayfs did not mount ", o.paths.merged, " in time"));
  }

  absl::Status UnmountOverlay(const std::string& merged, FuseProcess p) override {
    if (IsMounted(merged) && umount2(merged.c_str(), UMOUNT_NOFOLLOW) != 0) {
      const int err = errno;
      if (err == EBUSY) {
        return absl::FailedPreconditionError(
            absl::StrCat(merged, " is busy (a process still uses it); not unmounted"));
      }
      return ErrnoStatus(absl::StrCat("unmount ", merged), err);
    }
    if (p.pid > 0 && ProcessStartTime(p.pid) == p.start_time && p.start_time != 0 &&
        !WaitGone(p.pid, p.start_time, kExitTimeout)) {
      LAZ_LOG_WARNING << "fuse-overlayfs " << p.pid << " still runs after unmounting " << merged
                      << "; killing it";
      kill(p.pid, SIGKILL);
      WaitGone(p.pid, p.start_time, kExitTimeout);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<CappedMount> MountCapped(const CheckedProfile& profile,
                                          const std::string& profile_name,
                                          std::optional<uint64_t> cap_bytes, uid_t owner,
                                          bool read_only) override {
    const std::string mount_path = PersistMountPath(profile.profile_dir);
    if (IsMounted(mount_path)) {
      return absl::FailedPreconditionError(absl::StrCat(
          mount_path, " is already a mount point the helper does not know; unmount it"));
    }
    if (cap_bytes) {
      LAZ_RETURN_IF_ERROR(PrepareCappedImage(profile.profile, profile.profile_dir, profile_name,
                                             *cap_bytes, owner));
    }
    LAZ_ASSIGN_OR_RETURN(fs::UniqueFd image, OpenCappedImage(profile.profile, profile.profile_dir,
                                                             owner, !read_only));
    LAZ_ASSIGN_OR_RETURN(fs::DirFd mount_point, OpenPersistDir(profile, owner, true));
    LAZ_ASSIGN_OR_RETURN(CappedMount m, MountCappedImage(image, mount_point, mount_path,
                                                         capped_kind_, read_only));
    if (!read_only) {
      // mkfs makes the root 0755; the layers below are the helper's alone.
      absl::StatusOr<fs::DirFd> root = OpenPersistDir(profile, owner, false);
      absl::Status s = root.ok() ? absl::OkStatus() : root.status();
      if (s.ok() && fchmod(root->get(), 0700) != 0) {
        s = ErrnoStatus(absl::StrCat("chmod 0700 ", mount_path), errno);
      }
      if (!s.ok()) {
        absl::Status u = UnmountCappedImage(mount_path, m, std::chrono::seconds(5));
        if (!u.ok()) LAZ_LOG_WARNING << u;
        return s;
      }
    }
    return m;
  }

  absl::Status UnmountCapped(const std::string& profile_dir, CappedMount mount,
                             std::chrono::milliseconds busy_wait) override {
    return UnmountCappedImage(PersistMountPath(profile_dir), mount, busy_wait);
  }

  absl::StatusOr<CappedUsage> CappedUsageOf(const CheckedProfile& profile, uid_t owner) override {
    LAZ_ASSIGN_OR_RETURN(fs::DirFd root, OpenPersistDir(profile, owner, false));
    LAZ_ASSIGN_OR_RETURN(CappedUsage u, ::lazaret::mounthelper::CappedUsageOf(root));
    // The cap the image was made for is its file's size (ext4 keeps some
    // of it for itself, so the file system's own size is smaller).
    struct stat st {};
    if (fstatat(profile.profile.get(), kPersistImageName, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoStatus(absl::StrCat("stat ", PersistImagePath(profile.profile_dir)), errno);
    }
    u.size_bytes = static_cast<uint64_t>(st.st_size);
    return u;
  }

  bool HasCappedImage(const CheckedProfile& profile) override {
    struct stat st {};
    return fstatat(profile.profile.get(), kPersistImageName, &st, AT_SYMLINK_NOFOLLOW) == 0;
  }

  // A mount point has another device than its parent; a dead FUSE server
  // leaves one that answers ENOTCONN.
  bool IsMounted(const std::string& merged) override {
    struct stat st {};
    if (lstat(merged.c_str(), &st) != 0) return errno == ENOTCONN;
    struct stat parent {};
    const std::string up = merged.substr(0, merged.rfind('/'));
    return lstat(up.empty() ? "/" : up.c_str(), &parent) == 0 && parent.st_dev != st.st_dev;
  }

 private:
  const CappedKind capped_kind_;
};

}  // namespace

std::unique_ptr<OverlayOps> MakeSystemOverlayOps(CappedKind capped_kind) {
  return std::make_unique<SystemOverlayOps>(capped_kind);
}

}  // namespace lazaret::mounthelper
