#include "services/brokerd/command/executor.h"

#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "services/brokerd/command/resolve.h"
#include "services/brokerd/command/spawn.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd::command {
namespace {

// One output stream of the command.
struct Stream {
  fs::UniqueFd* fd;
  std::string* kept;
  uint64_t* bytes;
};

// Reads what `s` has now (at most 16 reads, so a command that writes as
// fast as it is read cannot keep Wait from its deadline), keeping up to
// `max`; closes it at end of file.
void Drain(const Stream& s, size_t max) {
  char buf[64 * 1024];
  for (int reads = 0; reads < 16 && s.fd->valid(); ++reads) {
    const ssize_t n = read(s.fd->get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      s.fd->reset();
      return;
    }
    *s.bytes += static_cast<uint64_t>(n);
    if (s.kept->size() < max) {
      s.kept->append(buf, std::min(static_cast<size_t>(n), max - s.kept->size()));
    }
  }
}

int PollTimeoutMs(absl::Time now, absl::Time next) {
  if (next == absl::InfiniteFuture()) return -1;
  if (next <= now) return 0;
  // Rounded up, so the loop does not spin a millisecond early.
  const int64_t ms = absl::ToInt64Milliseconds(next - now + absl::Microseconds(999));
  return static_cast<int>(std::min<int64_t>(ms, 60 * 1000));
}

}  // namespace

std::vector<std::string> BrokerEnvironment() {
  std::string home = "/";
  std::string user = absl::StrCat(geteuid());
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    if (pw.pw_dir != nullptr && pw.pw_dir[0] == '/') home = pw.pw_dir;
    if (pw.pw_name != nullptr && pw.pw_name[0] != '\0') user = pw.pw_name;
  }
  return {absl::StrCat("PATH=", kBrokerPath), absl::StrCat("HOME=", home),
          absl::StrCat("USER=", user), absl::StrCat("LOGNAME=", user), "LANG=C.UTF-8"};
}

RunningCommand::RunningCommand(pid_t pid, fs::UniqueFd out, fs::UniqueFd err, fs::UniqueFd pidfd,
                               fs::UniqueFd wake, const ExecLimits& limits, absl::Time start)
    : pid_(pid),
      out_(std::move(out)),
      err_(std::move(err)),
      pidfd_(std::move(pidfd)),
      wake_(std::move(wake)),
      limits_(limits),
      start_(start) {}

absl::StatusOr<std::unique_ptr<RunningCommand>> RunningCommand::Start(
    const CheckedCommand& command, const ExecLimits& limits,
    const std::vector<std::string>& extra_env) {
  if (limits.timeout <= absl::ZeroDuration() || limits.kill_grace < absl::ZeroDuration() ||
      limits.linger < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the command needs a positive timeout");
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return ErrnoStatus("eventfd", errno);
  fs::UniqueFd wake_fd(wake);
  std::vector<std::string> env = BrokerEnvironment();
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  const absl::Time start = absl::Now();
  LAZ_ASSIGN_OR_RETURN(Spawned spawned, Spawn(command, env));
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, spawned.pid, 0));
  if (pidfd < 0) {
    const int err = errno;
    (void)kill(-spawned.pid, SIGKILL);
    while (waitpid(spawned.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return ErrnoStatus("pidfd_open", err);
  }
  return std::unique_ptr<RunningCommand>(
      new RunningCommand(spawned.pid, std::move(spawned.out), std::move(spawned.err),
                         fs::UniqueFd(pidfd), std::move(wake_fd), limits, start));
}

RunningCommand::~RunningCommand() {
  if (reaped_) return;
  // Not reaped, so pid_ still names this group and no other.
  (void)kill(-pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

void RunningCommand::Cancel() {
  cancel_requested_.store(true);
  const uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof(one));
}

ExecResult RunningCommand::Wait() {
  if (reaped_) return result_;
  ExecResult r;
  const Stream streams[2] = {{&out_, &r.out, &r.out_bytes}, {&err_, &r.err, &r.err_bytes}};
  const absl::Time deadline = start_ + limits_.timeout;
  bool exited = false;
  absl::Time exited_at;
  std::optional<absl::Time> term_at, kill_at;
  // The command is not reaped before the loop ends, so -pid_ is its group.
  auto signal_group = [this](int sig) { (void)kill(-pid_, sig); };

  while (true) {
    const absl::Time now = absl::Now();
    const bool pipes_open = out_.valid() || err_.valid();
    if (!term_at && cancel_requested_.load()) {
      r.cancelled = true;
      signal_group(SIGTERM);
      term_at = now;
    }
    if (!term_at && !exited && now >= deadline) {
      r.timed_out = true;
      signal_group(SIGTERM);
      term_at = now;
    }
    if (!term_at && exited && pipes_open && now >= exited_at + limits_.linger) {
      signal_group(SIGTERM);
      term_at = now;
    }
    if (term_at && !kill_at && now >= *term_at + limits_.kill_grace) {
      signal_group(SIGKILL);
      kill_at = now;
    }
    // Done when the command exited and its output closed, or when the group
    // was killed (a process that left the group may hold the pipes forever).
    if (exited && (!pipes_open || kill_at)) break;

    absl::Time next = absl::InfiniteFuture();
    if (!term_at) {
      next = exited ? exited_at + limits_.linger : deadline;
    } else if (!kill_at) {
      next = *term_at + limits_.kill_grace;
    }
    struct pollfd fds[4] = {{out_.get(), POLLIN, 0},
                            {err_.get(), POLLIN, 0},
                            {exited ? -1 : pidfd_.get(), POLLIN, 0},
                            {wake_.get(), POLLIN, 0}};
    const int n = poll(fds, 4, PollTimeoutMs(now, next));
    if (n < 0 && errno != EINTR) break;  // cannot happen with valid descriptors
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents != 0) Drain(streams[i], limits_.max_output);
    }
    if (fds[2].revents != 0) {
      exited = true;
      exited_at = absl::Now();
    }
    if (fds[3].revents != 0) {
      uint64_t count;
      (void)!read(wake_.get(), &count, sizeof(count));
    }
  }
  for (const Stream& s : streams) Drain(s, limits_.max_output);
  out_.reset();
  err_.reset();
  // Whatever the command left in its group goes with it.
  signal_group(SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  r.run_time = absl::Now() - start_;
  r.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                      : -1;
  r.out_truncated = r.out_bytes > r.out.size();
  r.err_truncated = r.err_bytes > r.err.size();
  result_ = r;
  return r;
}

}  // namespace lazaret::brokerd::command
