#include "clients/lazaret/process/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/common/status_util.h"

extern char** environ;

namespace lazaret::cli {
namespace {

using Clock = std::chrono::steady_clock;

// argv as the char* array execve wants; `storage` owns the strings.
std::vector<char*> CArgv(std::vector<std::string>& storage) {
  std::vector<char*> out;
  out.reserve(storage.size() + 1);
  for (auto& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Signals the CLI blocks or handles; every child gets them back at default.
void DefaultSignalSet(sigset_t* set) {
  sigemptyset(set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU}) {
    sigaddset(set, s);
  }
}

// Starts argv with stdout/stderr on fresh pipes; returns pid and read ends.
// With options.stdin_data, stdin is one end of a socket pair and *in_fd the
// other (a socket, so writing after the child exited gives EPIPE through
// MSG_NOSIGNAL instead of a SIGPIPE that would kill the CLI).
absl::Status SpawnCapturing(const std::vector<std::string>& argv, const SpawnOptions& options,
                            pid_t* pid, int* out_fd, int* err_fd, int* in_fd) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  LAZ_ASSIGN_OR_RETURN(std::string path, FindProgram(argv[0]));
  int out[2], err[2], in[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
  if (pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    close(out[0]);
    close(out[1]);
    return ErrnoStatus("pipe", e);
  }
  if (options.stdin_data != nullptr &&
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    const int e = errno;
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return ErrnoStatus("socketpair", e);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in[0] >= 0) {
    posix_spawn_file_actions_adddup2(&fa, in[1], 0);
  } else {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  DefaultSignalSet(&defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> storage = argv;
  std::vector<char*> args = CArgv(storage);
  std::vector<std::string> env_storage;
  std::vector<char*> env;
  if (options.env != nullptr) {
    env_storage = *options.env;
    env = CArgv(env_storage);
  }
  const int rc = posix_spawn(pid, path.c_str(), &fa, &attr, args.data(),
                             options.env != nullptr ? env.data() : environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  close(err[1]);
  if (in[1] >= 0) {
    close(in[1]);
    shutdown(in[0], SHUT_RD);
  }
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    if (in[0] >= 0) close(in[0]);
    return ErrnoStatus(absl::StrCat("starting ", argv[0],
                                    options.cwd.empty() ? "" : absl::StrCat(" in ", options.cwd)),
                       rc);
  }
  *out_fd = out[0];
  *err_fd = err[0];
  if (in_fd != nullptr) *in_fd = in[0];
  return absl::OkStatus();
}

thread_local bool interruptible_by_signals = false;
// How often an interruptible wait looks for a pending termination signal.
constexpr int kSignalCheckMs = 50;

bool TerminationSignalPending() {
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
         sigismember(&pending, SIGHUP) == 1;
}

// Writes `input` to in_fd (then closes it) while reading both pipes to EOF,
// until the deadline; then reaps the child. On timeout the child's process
// group is killed.
absl::StatusOr<Captured> Collect(pid_t pid, int out_fd, int err_fd,
                                 std::chrono::milliseconds timeout, int in_fd = -1,
                                 const std::string* input = nullptr) {
  Captured r;
  const auto deadline = Clock::now() + timeout;
  pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {in_fd, POLLOUT, 0}};
  size_t written = 0;
  auto close_input = [&] {
    if (fds[2].fd >= 0) close(fds[2].fd);
    fds[2].fd = -1;
  };
  if (fds[2].fd >= 0 && (input == nullptr || input->empty())) close_input();
  int open_fds = 2;
  bool timed_out = false;
  bool cancelled = false;
  char buf[8192];
  while (open_fds > 0) {
    int wait_ms = -1;
    if (timeout.count() > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(left);
    }
    if (interruptible_by_signals) {
      if (TerminationSignalPending()) {
        cancelled = true;
        break;
      }
      if (wait_ms < 0 || wait_ms > kSignalCheckMs) wait_ms = kSignalCheckMs;
    }
    const int n = poll(fds, 3, wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      const ssize_t sent = send(fds[2].fd, input->data() + written, input->size() - written,
                                MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent > 0) written += static_cast<size_t>(sent);
      // Done, or the child stopped reading (EPIPE): it sees EOF either way.
      if (written == input->size() || (sent < 0 && errno != EINTR && errno != EAGAIN)) {
        close_input();
      }
    }
    for (int i = 0; i < 2; ++i) {
      pollfd& f = fds[i];
      if (f.fd < 0 || f.revents == 0) continue;
      const ssize_t got = read(f.fd, buf, sizeof(buf));
      if (got > 0) {
        (f.fd == out_fd ? r.out : r.err).append(buf, got);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        f.fd = -1;
        --open_fds;
      }
    }
  }
  close_input();
  close(out_fd);
  close(err_fd);
  if (timed_out || cancelled) {
    // The child leads its own process group (POSIX_SPAWN_SETPGROUP).
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus("waitpid", errno);
  }
  if (cancelled) {
    return absl::CancelledError("abandoned: a termination signal is pending");
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("timed out after ", timeout.count(), " ms"));
  }
  r.exit_code = ExitCodeOf(status);
  return r;
}

}  // namespace

InterruptibleBySignals::InterruptibleBySignals() : previous_(interruptible_by_signals) {
  interruptible_by_signals = true;
}

InterruptibleBySignals::~InterruptibleBySignals() { interruptible_by_signals = previous_; }

absl::StatusOr<std::string> FindProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), X_OK) == 0) return program;
    return absl::NotFoundError(absl::StrCat(program, ": ", std::strerror(errno)));
  }
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env != nullptr && *path_env != '\0'
                               ? path_env
                               : "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(program, " not found in PATH (", path, ")"));
}

absl::StatusOr<Captured> RunCaptured(const std::vector<std::string>& argv,
                                     std::chrono::milliseconds timeout) {
  SpawnOptions options;
  options.timeout = timeout;
  return RunCaptured(argv, options);
}

absl::StatusOr<Captured> RunCaptured(const std::vector<std::string>& argv,
                                     const SpawnOptions& options) {
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1, in_fd = -1;
  LAZ_RETURN_IF_ERROR(SpawnCapturing(argv, options, &pid, &out_fd, &err_fd, &in_fd));
  return Collect(pid, out_fd, err_fd, options.timeout, in_fd, options.stdin_data);
}

absl::StatusOr<AsyncCapture> AsyncCapture::Start(const std::vector<std::string>& argv) {
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
  LAZ_RETURN_IF_ERROR(SpawnCapturing(argv, SpawnOptions(), &pid, &out_fd, &err_fd, nullptr));
  return AsyncCapture(pid, out_fd, err_fd);
}

AsyncCapture::AsyncCapture(AsyncCapture&& other) noexcept
    : pid_(other.pid_), out_fd_(other.out_fd_), err_fd_(other.err_fd_) {
  other.pid_ = -1;
  other.out_fd_ = -1;
  other.err_fd_ = -1;
}

AsyncCapture::~AsyncCapture() {
  if (pid_ > 0) (void)Wait();
}

absl::StatusOr<Captured> AsyncCapture::Wait() {
  if (pid_ <= 0) return absl::FailedPreconditionError("already collected");
  const pid_t pid = pid_;
  pid_ = -1;
  return Collect(pid, out_fd_, err_fd_, std::chrono::milliseconds(0));
}

absl::StatusOr<pid_t> SpawnAttached(const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  LAZ_ASSIGN_OR_RETURN(std::string path, FindProgram(argv[0]));
  // Everything the child needs is built here, before fork (no allocation
  // between fork and execve).
  std::vector<std::string> storage = argv;
  std::vector<char*> args = CArgv(storage);
  sigset_t none;
  sigemptyset(&none);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return ErrnoStatus("fork", errno);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU}) {
      signal(s, SIG_DFL);
    }
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(path.c_str(), args.data(), environ);
    _exit(127);
  }
  return pid;
}

absl::StatusOr<int> RunInherited(const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command");
  LAZ_ASSIGN_OR_RETURN(std::string path, FindProgram(argv[0]));
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  DefaultSignalSet(&defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> storage = argv;
  std::vector<char*> args = CArgv(storage);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, path.c_str(), nullptr, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return ErrnoStatus(absl::StrCat("starting ", argv[0]), rc);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus("waitpid", errno);
  }
  return ExitCodeOf(status);
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 125;
}

std::string ShellQuote(const std::string& arg) {
  if (arg.empty()) return "''";
  bool plain = true;
  for (char c : arg) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("@%+=:,./_-", c) != nullptr)) {
      plain = false;
      break;
    }
  }
  if (plain) return arg;
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  quoted.reserve(argv.size());
  for (const auto& a : argv) quoted.push_back(ShellQuote(a));
  return absl::StrJoin(quoted, " ");
}

}  // namespace lazaret::cli
