#include "helper/mount/child_process.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "helper/mount/mounthelper.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::mounthelper {
namespace {

// Where the programs the helper runs are looked up, in order.
constexpr const char* kProgramDirs[] = {"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"};

}  // namespace

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

namespace {

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

}  // namespace

absl::StatusOr<Child> Spawn(const std::vector<std::string>& argv, bool capture,
                            const std::vector<int>& keep, bool file_ops) {
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

absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv,
                                     const std::vector<int>& keep) {
  LAZ_ASSIGN_OR_RETURN(Child c, Spawn(argv, true, keep));
  ChildResult r;
  char buf[4096];
  while (true) {
    const ssize_t n = read(c.out_fd, buf, sizeof(buf));
    if (n > 0 && r.output.size() < (1 << 20)) r.output.append(buf, n);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  close(c.out_fd);
  int ws = 0;
  while (waitpid(c.pid, &ws, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return r;
}

absl::StatusOr<std::string> RunCapture(const std::vector<std::string>& argv,
                                       const std::vector<int>& keep) {
  LAZ_ASSIGN_OR_RETURN(ChildResult r, RunChild(argv, keep));
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat(argv[0], " ", argv.size() > 1 ? argv[1] : "", " ",
                                            argv.size() > 2 ? argv[2] : "",
                                            " failed: ", absl::StripAsciiWhitespace(r.output)));
  }
  return std::move(r.output);
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

std::string FdPath(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

}  // namespace lazaret::mounthelper
