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
#include "helper/mount/mounthelper.h"
#include "helper/mount/thread_caps.h"
#include "services/common/log.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::mounthelper {
namespace {

constexpr auto kMountTimeout = std::chrono::seconds(20);
constexpr auto kExitTimeout = std::chrono::seconds(10);

// Where the programs the helper runs are looked up, in order.
constexpr const char* kProgramDirs[] = {"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"};

absl::StatusOr<std::string> FindProgram(const std::string& name) {
  for (const char* dir : kProgramDirs) {
    std::string p = absl::StrCat(dir, "/", name);
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return absl::NotFoundError(absl::StrCat(name,
                                          " is not installed (looked in /usr/local/bin, "
                                          "/usr/bin, /bin, /usr/sbin, /sbin); install it "
                                          "(deploy/setup-host.sh)"));
}

// Children get CAP_SYS_ADMIN and, when `file_ops`, the delegated file
// capabilities (mounthelper.h) as ambient capabilities: with no_new_privs
// and SECBIT_NOROOT nothing else could give podman the right to mount and
// fuse-overlayfs the right to serve files of every owner. Raw syscalls
// only: runs between fork and execve.
void RaiseAmbient(bool file_ops) {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return;
  data[0].inheritable |= 1u << CAP_SYS_ADMIN;
  if (file_ops) {
    for (cap_value_t c : kDelegatedCapabilities) data[0].inheritable |= 1u << c;
  }
  if (syscall(SYS_capset, &hdr, data) != 0) return;
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0);
  if (file_ops) {
    for (cap_value_t c : kDelegatedCapabilities) {
      prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0);
    }
  }
}

struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // stdout and stderr, when captured
};

// Forks and execs `argv` (argv[0] absolute) in a session of its own, with
// stdin on /dev/null and stdout+stderr on a pipe (`capture`) or the
// helper's stderr. `keep` descriptors stay open across execve.
absl::StatusOr<Child> Spawn(const std::vector<std::string>& argv, bool capture,
                            const std::vector<int>& keep, bool file_ops = false) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) return ErrnoStatus("open /dev/null", errno);
  int pipefd[2] = {-1, -1};
  if (capture && pipe2(pipefd, O_CLOEXEC) != 0) {
    close(devnull);
    return ErrnoStatus("pipe", errno);
  }
  const int* keep_fds = keep.data();
  const size_t nkeep = keep.size();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(devnull);
    if (capture) close(pipefd[0]), close(pipefd[1]);
    return ErrnoStatus("fork", err);
  }
  if (pid == 0) {
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(devnull, 0);
    if (capture) {
      dup2(pipefd[1], 1);
      dup2(pipefd[1], 2);
    } else {
      dup2(2, 1);
    }
    for (size_t i = 0; i < nkeep; ++i) fcntl(keep_fds[i], F_SETFD, 0);
    RaiseAmbient(file_ops);
    execve(args[0], args.data(), environ);
    _exit(127);
  }
  close(devnull);
  Child c{pid, -1};
  if (capture) {
    close(pipefd[1]);
    c.out_fd = pipefd[0];
  }
  return c;
}

// Runs `argv` to completion; its output, or an error naming the command
// and what it wrote.
absl::StatusOr<std::string> RunCapture(const std::vector<std::string>& argv) {
  LAZ_ASSIGN_OR_RETURN(Child c, Spawn(argv, true, {}));
  std::string out;
  char buf[4096];
  while (true) {
    const ssize_t n = read(c.out_fd, buf, sizeof(buf));
    if (n > 0 && out.size() < (1 << 20)) out.append(buf, n);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  close(c.out_fd);
  int ws = 0;
  while (waitpid(c.pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
    return absl::InternalError(absl::StrCat(argv[0], " ", argv.size() > 1 ? argv[1] : "", " ",
                                            argv.size() > 2 ? argv[2] : "",
                                            " failed: ", absl::StripAsciiWhitespace(out)));
  }
  return out;
}

std::string FdPath(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

dev_t DevOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_dev : 0;
}

// Waits until `pid` is gone (a child of ours, or one adopted from a
// previous helper, through its pidfd).
bool WaitGone(pid_t pid, uint64_t start_time, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int ws = 0;
    const pid_t r = waitpid(pid, &ws, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno == ECHILD && ProcessStartTime(pid) != start_time) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The messages the kernel left in a file system context (fsopen(2)): "e
// overlay: ..." lines, joined.
std::string ContextMessages(int fs_fd) {
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

// An error of the kernel overlay's set-up: UNIMPLEMENTED for what means
// "the kernel will not do this overlay here" (the caller may use
// fuse-overlayfs), the errno's status otherwise.
absl::Status KernelOverlayError(const std::string& what, int fs_fd, int err) {
  const std::string messages = fs_fd >= 0 ? ContextMessages(fs_fd) : "";
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
    const std::vector<std::string> argv = {
        fuse, "-f", "-o",
        absl::StrCat("lowerdir=", FdPath(lower.get()), ",upperdir=", FdPath(o.changes.get()),
                     ",workdir=", FdPath(o.work.get())),
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

  // A mount point has another device than its parent; a dead FUSE server
  // leaves one that answers ENOTCONN.
  bool IsMounted(const std::string& merged) override {
    struct stat st {};
    if (lstat(merged.c_str(), &st) != 0) return errno == ENOTCONN;
    struct stat parent {};
    const std::string up = merged.substr(0, merged.rfind('/'));
    return lstat(up.empty() ? "/" : up.c_str(), &parent) == 0 && parent.st_dev != st.st_dev;
  }
};

}  // namespace

std::unique_ptr<OverlayOps> MakeSystemOverlayOps() { return std::make_unique<SystemOverlayOps>(); }

uint64_t ProcessStartTime(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  const size_t close_paren = s.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::vector<std::string> f = absl::StrSplit(s.substr(close_paren + 2), ' ');
  // Field 3 (state) is f[0]; field 22 (starttime) is f[19].
  if (f.size() < 20 || f[0] == "Z" || f[0] == "X") return 0;
  uint64_t v = 0;
  for (char ch : f[19]) v = v * 10 + (ch - '0');
  return v;
}

}  // namespace lazaret::mounthelper
