#include "helper/mount/capped_fs.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "helper/mount/child_process.h"
#include "services/common/log.h"
#include "services/common/persist_layout.h"
#include "services/common/status_util.h"

namespace lazaret::mounthelper {
namespace {

constexpr auto kCappedMountTimeout = std::chrono::seconds(30);
constexpr auto kCappedExitTimeout = std::chrono::seconds(60);
constexpr char kNewImageName[] = "persist.img.new";

std::string ImageName(const std::string& profile_dir) {
  return absl::StrCat(profile_dir, "/", kPersistImageName);
}

absl::Status CheckImageFile(int fd, const std::string& path, uid_t owner) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return ErrnoStatus(absl::StrCat("stat ", path), errno);
  if (!S_ISREG(st.st_mode) || st.st_uid != owner || st.st_nlink != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is not a regular file of uid ", owner,
        " with one link (the mount helper's own image of the profile's persistent data); "
        "remove it with `lazaret state reset`"));
  }
  return absl::OkStatus();
}

// Free space for non-root users (f_bavail: root's reserve is never taken)
// on the file system holding `fd`, against what must still be allocated.
absl::Status CheckFreeSpace(int fd, const std::string& profile_dir, const std::string& profile_name,
                            uint64_t cap_bytes, uint64_t allocated) {
  if (allocated >= cap_bytes) return absl::OkStatus();
  struct statvfs vfs {};
  if (fstatvfs(fd, &vfs) != 0) return ErrnoStatus(absl::StrCat("statvfs ", profile_dir), errno);
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const uint64_t needed = cap_bytes - allocated;
  if (free_bytes >= needed) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "profile '", profile_name, "' keeps its persistent data in ", profile_dir,
      " preallocated to persistent_cap ", CapText(cap_bytes), ", which needs ", CapText(needed),
      " more, but that file system has only ", CapText(free_bytes),
      " free for non-root users. Free space there, or lower persistent_cap in [profiles.",
      profile_name, "]"));
}

absl::Status Preallocate(int fd, const std::string& path, uint64_t bytes) {
  int r;
  do {
    r = fallocate(fd, 0, 0, static_cast<off_t>(bytes));
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    const int err = errno;
    if (err == EOPNOTSUPP) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the file system of ", path,
          " cannot preallocate files (fallocate); the persistent data's cap needs one that can "
          "(ext4, xfs, btrfs, tmpfs): move data_root there"));
    }
    return ErrnoStatus(absl::StrCat("preallocating ", CapText(bytes), " for ", path), err);
  }
  if (fsync(fd) != 0) return ErrnoStatus(absl::StrCat("fsync ", path), errno);
  return absl::OkStatus();
}

// e2fsck -f -p: exit 0 or 1 (errors fixed) is a usable file system.
absl::Status CheckFileSystem(int fd, const std::string& path) {
  LAZ_ASSIGN_OR_RETURN(std::string e2fsck, FindProgram("e2fsck"));
  LAZ_ASSIGN_OR_RETURN(ChildResult r, RunChild({e2fsck, "-f", "-p", FdPath(fd)}, {fd}));
  if (r.exit_code == 0 || r.exit_code == 1) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("e2fsck found errors in ", path, " it cannot fix by itself (exit ", r.exit_code,
                   ": ", absl::StripAsciiWhitespace(r.output), "). Run `e2fsck -f ", path,
                   "` on it, or drop the data with `lazaret state reset`"));
}

absl::Status MakeFileSystem(int fd, const std::string& path) {
  LAZ_ASSIGN_OR_RETURN(std::string mkfs, FindProgram("mkfs.ext4"));
  // No reserved blocks: the cap is the cap. nodiscard: a discard of a
  // file's blocks punches holes, giving back the preallocation. The inode
  // tables and journal are written now, not by a lazy thread later that
  // would zero them through the loop device (also hole punching).
  return RunCapture({mkfs, "-F", "-q", "-m", "0", "-b", absl::StrCat(kCappedBlockSize), "-E",
                     absl::StrCat("nodiscard,lazy_itable_init=0,lazy_journal_init=0,root_owner=",
                                  geteuid(), ":", getegid()),
                     FdPath(fd)},
                    {fd})
      .status();
}

absl::Status CreateImage(const fs::DirFd& profile, const std::string& profile_dir,
                         const std::string& profile_name, uint64_t cap_bytes) {
  const std::string path = ImageName(profile_dir);
  const std::string tmp_path = absl::StrCat(profile_dir, "/", kNewImageName);
  // Made under another name and renamed when complete: an image is never
  // half made (an interrupted creation leaves only persist.img.new).
  (void)unlinkat(profile.get(), kNewImageName, 0);
  const int raw = openat(profile.get(), kNewImageName,
                         O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (raw < 0) return ErrnoStatus(absl::StrCat("create ", tmp_path), errno);
  fs::UniqueFd fd(raw);
  absl::Status s = CheckFreeSpace(fd.get(), profile_dir, profile_name, cap_bytes, 0);
  if (s.ok()) s = Preallocate(fd.get(), tmp_path, cap_bytes);
  if (s.ok()) s = MakeFileSystem(fd.get(), tmp_path);
  if (s.ok() && fsync(fd.get()) != 0) s = ErrnoStatus(absl::StrCat("fsync ", tmp_path), errno);
  if (s.ok() && renameat(profile.get(), kNewImageName, profile.get(), kPersistImageName) != 0) {
    s = ErrnoStatus(absl::StrCat("rename ", tmp_path, " to ", path), errno);
  }
  if (!s.ok()) {
    (void)unlinkat(profile.get(), kNewImageName, 0);
    return s;
  }
  LAZ_LOG_INFO << "made " << path << " (" << CapText(cap_bytes) << ", preallocated)";
  return absl::OkStatus();
}

// The smallest size resize2fs can shrink the file system to, in bytes.
absl::StatusOr<uint64_t> MinimumSize(int fd, const std::string& path) {
  LAZ_ASSIGN_OR_RETURN(std::string resize2fs, FindProgram("resize2fs"));
  LAZ_ASSIGN_OR_RETURN(std::string out, RunCapture({resize2fs, "-P", FdPath(fd)}, {fd}));
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    const size_t colon = line.rfind(':');
    if (!absl::StrContains(line, "minimum size") || colon == absl::string_view::npos) continue;
    uint64_t blocks = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(colon + 1)), &blocks)) {
      return blocks * kCappedBlockSize;
    }
  }
  return absl::InternalError(
      absl::StrCat("resize2fs -P printed no minimum size for ", path, ": ", out));
}

absl::Status Resize(int fd, const std::string& path, uint64_t cap_bytes) {
  LAZ_ASSIGN_OR_RETURN(std::string resize2fs, FindProgram("resize2fs"));
  return RunCapture({resize2fs, FdPath(fd), absl::StrCat(cap_bytes / 1024, "K")}, {fd}).status();
}

}  // namespace

std::string_view CappedKindName(CappedKind kind) {
  return kind == CappedKind::kLoop ? "loop-mounted ext4 image" : "ext4 image served by fuse2fs";
}

std::string_view CappedKindKey(CappedKind kind) {
  return kind == CappedKind::kLoop ? "loop" : "fuse2fs";
}

bool ParseCappedKind(std::string_view key, CappedKind* out) {
  if (key == "loop") {
    *out = CappedKind::kLoop;
  } else if (key == "fuse2fs") {
    *out = CappedKind::kFuse2fs;
  } else {
    return false;
  }
  return true;
}

CappedKind DefaultCappedKind() {
  std::ifstream in("/proc/self/uid_map");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<std::string> f = absl::StrSplit(absl::StripAsciiWhitespace(ss.str()),
                                              absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  const bool initial = f.size() == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295";
  return initial ? CappedKind::kLoop : CappedKind::kFuse2fs;
}

std::string CapText(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024 && unit < 3) {
    v /= 1024;
    ++unit;
  }
  const uint64_t whole = uint64_t{1} << (10 * (unit + 1));
  if (bytes % whole == 0) return absl::StrCat(bytes / whole, " ", kUnits[unit]);
  return absl::StrFormat("%.1f %s", v, kUnits[unit]);
}

absl::StatusOr<fs::UniqueFd> OpenCappedImage(const fs::DirFd& profile,
                                             const std::string& profile_dir, uid_t owner,
                                             bool write) {
  const std::string path = ImageName(profile_dir);
  const int raw = openat(profile.get(), kPersistImageName,
                         (write ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
  if (raw < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    if (errno == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat(path,
                       " is a symlink; Lazaret never follows one in profile state. "
                       "Remove it"));
    }
    return ErrnoStatus(absl::StrCat("open ", path), errno);
  }
  fs::UniqueFd fd(raw);
  LAZ_RETURN_IF_ERROR(CheckImageFile(fd.get(), path, owner));
  return fd;
}

absl::Status PrepareCappedImage(const fs::DirFd& profile, const std::string& profile_dir,
                                const std::string& profile_name, uint64_t cap_bytes, uid_t owner) {
  if (cap_bytes < kMinPersistentCap || cap_bytes > kMaxPersistentCap) {
    return absl::InvalidArgumentError(absl::StrCat(
        "persistent_cap of profile '", profile_name, "' is ", CapText(cap_bytes),
        "; it must be between ", CapText(kMinPersistentCap), " and ", CapText(kMaxPersistentCap)));
  }
  cap_bytes -= cap_bytes % kCappedBlockSize;
  absl::StatusOr<fs::UniqueFd> image = OpenCappedImage(profile, profile_dir, owner, true);
  if (absl::IsNotFound(image.status())) {
    return CreateImage(profile, profile_dir, profile_name, cap_bytes);
  }
  if (!image.ok()) return image.status();
  const std::string path = ImageName(profile_dir);
  struct stat st {};
  if (fstat(image->get(), &st) != 0) return ErrnoStatus(absl::StrCat("stat ", path), errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == cap_bytes) return absl::OkStatus();
  if (size < cap_bytes) {
    LAZ_RETURN_IF_ERROR(CheckFreeSpace(image->get(), profile_dir, profile_name, cap_bytes,
                                       static_cast<uint64_t>(st.st_blocks) * 512));
    LAZ_RETURN_IF_ERROR(Preallocate(image->get(), path, cap_bytes));
    LAZ_RETURN_IF_ERROR(CheckFileSystem(image->get(), path));
    LAZ_RETURN_IF_ERROR(Resize(image->get(), path, cap_bytes));
    LAZ_LOG_INFO << "grew " << path << " from " << CapText(size) << " to " << CapText(cap_bytes);
    return absl::OkStatus();
  }
  LAZ_RETURN_IF_ERROR(CheckFileSystem(image->get(), path));
  LAZ_ASSIGN_OR_RETURN(uint64_t minimum, MinimumSize(image->get(), path));
  const std::string too_big =
      absl::StrCat("profile '", profile_name, "''s persistent data uses ", CapText(minimum),
                   ", more than persistent_cap ", CapText(cap_bytes),
                   ": raise persistent_cap or `lazaret state reset ", profile_name, "`");
  if (minimum > cap_bytes) return absl::FailedPreconditionError(too_big);
  absl::Status resized = Resize(image->get(), path, cap_bytes);
  if (!resized.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(too_big, " (", resized.message(), ")"));
  }
  if (ftruncate(image->get(), static_cast<off_t>(cap_bytes)) != 0 || fsync(image->get()) != 0) {
    return ErrnoStatus(absl::StrCat("truncating ", path, " to ", CapText(cap_bytes)), errno);
  }
  LAZ_LOG_INFO << "shrank " << path << " from " << CapText(size) << " to " << CapText(cap_bytes);
  return absl::OkStatus();
}

namespace {

// A free loop device bound to `image` that detaches itself when its last
// user (the mount) goes away.
absl::StatusOr<std::pair<fs::UniqueFd, std::string>> AttachLoop(int image, bool read_only) {
  const int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0) {
    return ErrnoStatus(
        "open /dev/loop-control (the loop module: `modprobe loop`, deploy/setup-host.sh)", errno);
  }
  fs::UniqueFd control(ctl);
  for (int attempt = 0; attempt < 32; ++attempt) {
    const int n = ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return ErrnoStatus("LOOP_CTL_GET_FREE on /dev/loop-control", errno);
    const std::string dev = absl::StrCat("/dev/loop", n);
    const int raw = open(dev.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (raw < 0) return ErrnoStatus(absl::StrCat("open ", dev), errno);
    fs::UniqueFd loop(raw);
    struct loop_config config {};
    config.fd = static_cast<uint32_t>(image);
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR | (read_only ? LO_FLAGS_READ_ONLY : 0);
    absl::SNPrintF(reinterpret_cast<char*>(config.info.lo_file_name), LO_NAME_SIZE,
                   "lazaret persist.img");
    if (ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) {
      return std::make_pair(std::move(loop), dev);
    }
    // Another process took the device between GET_FREE and CONFIGURE.
    if (errno != EBUSY) return ErrnoStatus(absl::StrCat("LOOP_CONFIGURE ", dev), errno);
  }
  return absl::UnavailableError("no free loop device after 32 attempts");
}

absl::Status MountLoop(const fs::UniqueFd& image, const fs::DirFd& mount_point,
                       const std::string& mount_path, bool read_only) {
  LAZ_ASSIGN_OR_RETURN(auto loop, AttachLoop(image.get(), read_only));
  const int raw = fsopen("ext4", FSOPEN_CLOEXEC);
  if (raw < 0) return ErrnoStatus("fsopen ext4", errno);
  fs::UniqueFd fs_fd(raw);
  auto fail = [&](const std::string& what) {
    const int err = errno;
    const std::string m = FsContextMessages(fs_fd.get());
    return ErrnoStatus(absl::StrCat(what, m.empty() ? "" : absl::StrCat(" (", m, ")")), err);
  };
  if (fsconfig(fs_fd.get(), FSCONFIG_SET_STRING, "source", loop.second.c_str(), 0) != 0) {
    return fail("ext4 source");
  }
  if (read_only && fsconfig(fs_fd.get(), FSCONFIG_SET_FLAG, "ro", nullptr, 0) != 0) {
    return fail("ext4 ro");
  }
  if (fsconfig(fs_fd.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return fail(absl::StrCat("mounting ext4 from ", loop.second, " for ", mount_path));
  }
  const int mnt =
      fsmount(fs_fd.get(), FSMOUNT_CLOEXEC,
              MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID | (read_only ? MOUNT_ATTR_RDONLY : 0));
  if (mnt < 0) return fail("fsmount ext4");
  fs::UniqueFd mount_fd(mnt);
  if (move_mount(mount_fd.get(), "", mount_point.get(), "",
                 MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    return ErrnoStatus(absl::StrCat("mounting ", loop.second, " at ", mount_path), errno);
  }
  // The loop device's descriptor closes here; the mount keeps it, and it
  // detaches itself after the unmount (LO_FLAGS_AUTOCLEAR).
  return absl::OkStatus();
}

dev_t CappedDevOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_dev : 0;
}

absl::StatusOr<CappedMount> MountFuse2fs(const fs::UniqueFd& image, const fs::DirFd& mount_point,
                                         const std::string& mount_path, bool read_only) {
  LAZ_ASSIGN_OR_RETURN(std::string fuse2fs, FindProgram("fuse2fs"));
  // fakeroot: fuse2fs itself lets every caller act as root inside the
  // image; the only caller is fuse-overlayfs (the mount is the helper's
  // user's, without allow_other), which applies the sandbox's owners.
  const std::vector<std::string> argv = {
      fuse2fs,
      FdPath(image.get()),
      FdPath(mount_point.get()),
      "-f",
      "-o",
      read_only ? "fakeroot,nodev,nosuid,ro" : "fakeroot,nodev,nosuid"};
  const dev_t before = CappedDevOf(mount_path);
  LAZ_ASSIGN_OR_RETURN(Child c, Spawn(argv, false, {image.get(), mount_point.get()}));
  const CappedMount m{CappedKind::kFuse2fs, c.pid, ProcessStartTime(c.pid)};
  const auto deadline = std::chrono::steady_clock::now() + kCappedMountTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const dev_t now = CappedDevOf(mount_path);
    if (now != 0 && now != before) return m;
    int ws = 0;
    if (waitpid(c.pid, &ws, WNOHANG) == c.pid) {
      return absl::InternalError(
          absl::StrCat("fuse2fs exited before mounting ", mount_path, " (",
                       WIFEXITED(ws) ? absl::StrCat("status ", WEXITSTATUS(ws)) : "killed",
                       "; its messages are in the supervisor's log)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(c.pid, SIGKILL);
  WaitGone(c.pid, m.start_time, std::chrono::seconds(10));
  return absl::DeadlineExceededError(
      absl::StrCat("fuse2fs did not mount ", mount_path, " in time"));
}

}  // namespace

absl::StatusOr<CappedMount> MountCappedImage(const fs::UniqueFd& image,
                                             const fs::DirFd& mount_point,
                                             const std::string& mount_path, CappedKind kind,
                                             bool read_only) {
  if (kind == CappedKind::kFuse2fs) return MountFuse2fs(image, mount_point, mount_path, read_only);
  LAZ_RETURN_IF_ERROR(MountLoop(image, mount_point, mount_path, read_only));
  return CappedMount{CappedKind::kLoop, 0, 0};
}

absl::Status UnmountCappedImage(const std::string& mount_path, CappedMount m,
                                std::chrono::milliseconds busy_wait) {
  struct stat st {};
  struct stat parent {};
  const std::string up = mount_path.substr(0, mount_path.rfind('/'));
  const bool mounted = lstat(mount_path.c_str(), &st) != 0
                           ? errno == ENOTCONN
                           : lstat(up.c_str(), &parent) == 0 && parent.st_dev != st.st_dev;
  const auto deadline = std::chrono::steady_clock::now() + busy_wait;
  while (mounted && umount2(mount_path.c_str(), UMOUNT_NOFOLLOW) != 0) {
    const int err = errno;
    if (err != EBUSY) return ErrnoStatus(absl::StrCat("unmount ", mount_path), err);
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::FailedPreconditionError(absl::StrCat(
          mount_path, " is busy (an overlay over it, or a process, still uses it); not unmounted"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (m.pid > 0 && m.start_time != 0 && ProcessStartTime(m.pid) == m.start_time &&
      !WaitGone(m.pid, m.start_time, kCappedExitTimeout)) {
    LAZ_LOG_WARNING << "fuse2fs " << m.pid << " still runs after unmounting " << mount_path
                    << "; killing it";
    kill(m.pid, SIGKILL);
    WaitGone(m.pid, m.start_time, std::chrono::seconds(10));
  }
  return absl::OkStatus();
}

absl::StatusOr<CappedUsage> CappedUsageOf(const fs::DirFd& mount_point) {
  struct statvfs v {};
  if (fstatvfs(mount_point.get(), &v) != 0) return ErrnoStatus("statvfs of the capped data", errno);
  CappedUsage u;
  u.size_bytes = static_cast<uint64_t>(v.f_blocks) * v.f_frsize;
  u.used_bytes = static_cast<uint64_t>(v.f_blocks - v.f_bfree) * v.f_frsize;
  u.free_bytes = static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
  u.inodes_total = v.f_files;
  u.inodes_used = v.f_files - v.f_ffree;
  return u;
}

std::string FsContextMessages(int fs_fd) {
  std::string out;
  char buf[512];
  for (int i = 0; i < 8; ++i) {
    const ssize_t n = read(fs_fd, buf, sizeof(buf));
    if (n <= 0) break;
    if (!out.empty()) out += "; ";
    out.append(buf, static_cast<size_t>(n));
  }
  return std::string(absl::StripAsciiWhitespace(out));
}

}  // namespace lazaret::mounthelper
