#include "helper/mount/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "helper/mount/mounthelper.h"
#include "services/common/status_util.h"
#include "services/spawn/spawn.h"

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

absl::StatusOr<Child> Spawn(const std::vector<std::string>& argv, bool capture,
                            const std::vector<int>& keep, bool file_ops) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return absl::InvalidArgumentError("a helper program is run by its absolute path (FindProgram)");
  }
  cli::ChildSpec spec;
  spec.argv = argv;
  spec.program = argv[0];
  spec.group = cli::ChildGroup::kOwnSession;
  spec.stdin_fd = cli::ChildStdio::DevNull();
  int pipefd[2] = {-1, -1};
  if (capture) {
    if (pipe2(pipefd, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
    spec.stdout_fd = cli::ChildStdio::Fd(pipefd[1]);
    spec.stderr_fd = cli::ChildStdio::Fd(pipefd[1]);
  } else {
    spec.stdout_fd = cli::ChildStdio::Fd(STDERR_FILENO);
  }
  for (int fd : keep) spec.extra_fds.emplace_back(fd, fd);
  // CAP_SYS_ADMIN and, when `file_ops`, the delegated file capabilities
  // (mounthelper.h) as ambient capabilities: with no_new_privs and
  // SECBIT_NOROOT nothing else could give podman the right to mount and
  // fuse-overlayfs the right to serve files of every owner.
  spec.ambient_capabilities = uint64_t{1} << CAP_SYS_ADMIN;
  if (file_ops) {
    for (cap_value_t c : kDelegatedCapabilities) spec.ambient_capabilities |= uint64_t{1} << c;
  }
  absl::StatusOr<cli::PreparedChild> child = cli::PreparedChild::Create(std::move(spec));
  const absl::StatusOr<pid_t> pid = child.ok() ? cli::Spawn(*child) : child.status();
  if (capture) close(pipefd[1]);
  if (!pid.ok()) {
    if (capture) close(pipefd[0]);
    return pid.status();
  }
  return Child{*pid, capture ? pipefd[0] : -1};
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
