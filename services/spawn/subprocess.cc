#include "services/spawn/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::cli {
namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<pid_t> StartChild(ChildSpec spec) {
  LAZ_ASSIGN_OR_RETURN(PreparedChild child, PreparedChild::Create(std::move(spec)));
  return Spawn(child);
}

absl::StatusOr<int> WaitExitCode(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus("waitpid", errno);
  }
  return ExitCodeOf(status);
}

// Starts argv with stdout/stderr on fresh pipes, in a process group of its
// own; returns pid and read ends. With options.stdin_data, stdin is one end
// of a socket pair and *in_fd the other (a socket, so writing after the
// child exited gives EPIPE through MSG_NOSIGNAL instead of a SIGPIPE that
// would kill the CLI).
absl::Status SpawnCapturing(const std::vector<std::string>& argv, const SpawnOptions& options,
                            pid_t* pid, int* out_fd, int* err_fd, int* in_fd) {
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
  ChildSpec spec;
  spec.argv = argv;
  if (options.env != nullptr) spec.env = *options.env;
  spec.cwd = options.cwd;
  spec.group = ChildGroup::kOwnGroup;
  spec.stdin_fd = in[0] >= 0 ? ChildStdio::Fd(in[1]) : ChildStdio::DevNull();
  spec.stdout_fd = ChildStdio::Fd(out[1]);
  spec.stderr_fd = ChildStdio::Fd(err[1]);
  absl::StatusOr<pid_t> started = StartChild(std::move(spec));
  close(out[1]);
  close(err[1]);
  if (in[1] >= 0) {
    close(in[1]);
    shutdown(in[0], SHUT_RD);
  }
  if (!started.ok()) {
    close(out[0]);
    close(err[0]);
    if (in[0] >= 0) close(in[0]);
    return started.status();
  }
  *pid = *started;
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
// until the deadline; then reaps the child. On timeout, or once a stream
// goes past `max_output`, the child's process group is killed.
absl::StatusOr<Captured> Collect(pid_t pid, int out_fd, int err_fd,
                                 std::chrono::milliseconds timeout, size_t max_output,
                                 int in_fd = -1, const std::string* input = nullptr) {
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
  const char* overflowed = nullptr;  // the stream that went past max_output
  char buf[8192];
  while (open_fds > 0 && overflowed == nullptr) {
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
        std::string& into = f.fd == out_fd ? r.out : r.err;
        if (static_cast<size_t>(got) > max_output - into.size()) {
          overflowed = f.fd == out_fd ? "stdout" : "stderr";
          break;
        }
        into.append(buf, got);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        f.fd = -1;
        --open_fds;
      }
    }
  }
  close_input();
  close(out_fd);
  close(err_fd);
  if (timed_out || cancelled || overflowed != nullptr) {
    // The child leads its own process group (POSIX_SPAWN_SETPGROUP).
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  LAZ_ASSIGN_OR_RETURN(const int exit_code, WaitExitCode(pid));
  if (cancelled) {
    return absl::CancelledError("abandoned: a termination signal is pending");
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("timed out after ", timeout.count(), " ms"));
  }
  if (overflowed != nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("wrote more than ", max_output, " bytes to ", overflowed, " and was killed"));
  }
  r.exit_code = exit_code;
  return r;
}

}  // namespace

InterruptibleBySignals::InterruptibleBySignals() : previous_(interruptible_by_signals) {
  interruptible_by_signals = true;
}

InterruptibleBySignals::~InterruptibleBySignals() { interruptible_by_signals = previous_; }

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
  return Collect(pid, out_fd, err_fd, options.timeout, options.max_output_bytes, in_fd,
                 options.stdin_data);
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
  return Collect(pid, out_fd_, err_fd_, std::chrono::milliseconds(0), kDefaultMaxOutputBytes);
}

absl::StatusOr<pid_t> SpawnAttached(const std::vector<std::string>& argv) {
  ChildSpec spec;
  spec.argv = argv;
  spec.die_with_parent = true;
  return StartChild(std::move(spec));
}

absl::StatusOr<int> RunInherited(const std::vector<std::string>& argv) {
  ChildSpec spec;
  spec.argv = argv;
  LAZ_ASSIGN_OR_RETURN(const pid_t pid, StartChild(std::move(spec)));
  return WaitExitCode(pid);
}

}  // namespace lazaret::cli
