// Running a checked command on the host and collecting its output. Runs in
// lazaret-brokerd (no capabilities, the broker's uid); the command runs
// with the broker's uid too. Only a CheckedCommand can be started, and
// nothing of the request reaches the child but its argv: the environment is
// the broker's fixed one (plus, for git, the broker's own protections),
// stdin is /dev/null, no descriptor but 0, 1 and 2
// survives execve, the signal mask and dispositions are reset. The output
// is the command's and trusted for nothing (kept as bytes, bounded).
//
// Preconditions: SIGCHLD is not ignored (SIG_IGN would reap the child
// before Wait can), and nothing else in the process reaps children it did
// not start (waitpid(-1, ...)).
#ifndef LAZARET_SERVICES_BROKERD_COMMAND_EXECUTOR_H_
#define LAZARET_SERVICES_BROKERD_COMMAND_EXECUTOR_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/brokerd/command/checked_command.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd::command {

struct ExecLimits {
  // Bytes kept per stream; the rest is read, counted and dropped.
  size_t max_output = 1 << 20;
  // From start to SIGTERM of the process group. Must be > 0 (Start refuses
  // anything else; the policy's command_timeout_seconds).
  absl::Duration timeout = absl::ZeroDuration();
  // From SIGTERM to SIGKILL.
  absl::Duration kill_grace = absl::Seconds(2);
  // How long the pipes may stay open after the command itself exited (a
  // background child holding them) before the group gets SIGTERM.
  absl::Duration linger = absl::Milliseconds(500);
};

struct ExecResult {
  // WEXITSTATUS, or 128 + the signal that ended the command.
  int exit_code = -1;
  bool timed_out = false;
  bool cancelled = false;
  std::string out;
  std::string err;
  bool out_truncated = false;
  bool err_truncated = false;
  // Everything the command wrote to each stream, kept or not.
  uint64_t out_bytes = 0;
  uint64_t err_bytes = 0;
  absl::Duration run_time;
};

// The environment every host command gets, and nothing else but what the
// broker adds for git (Start's extra_env): PATH
// (kBrokerPath), HOME, USER and LOGNAME from the passwd entry of the
// broker's euid (HOME=/ and the numeric uid when there is none), LANG=C.UTF-8.
std::vector<std::string> BrokerEnvironment();

// One started command: its own process group (pgid == its pid), stdout and
// stderr on pipes the broker reads. Nothing the command starts in that
// group outlives Wait(): once the command exited and its output closed (or
// the group was killed), the group gets SIGKILL before the command is
// reaped. Wait() is called by one thread; Cancel() from any thread.
class RunningCommand {
 public:
  // `extra_env`: NAME=value entries added after BrokerEnvironment() (the
  // broker's own protections for git, planted_check.h); never from the
  // request.
  static absl::StatusOr<std::unique_ptr<RunningCommand>> Start(
      const CheckedCommand& command, const ExecLimits& limits,
      const std::vector<std::string>& extra_env = {});
  // Kills the group and reaps the command when Wait() has not.
  ~RunningCommand();
  RunningCommand(const RunningCommand&) = delete;
  RunningCommand& operator=(const RunningCommand&) = delete;

  // Reads the output until the command exited and its output closed, the
  // timeout struck (SIGTERM to the group, kill_grace, SIGKILL) or Cancel()
  // was called (the same), then reaps it. A second call returns the same
  // result.
  ExecResult Wait();
  // Asks Wait() to end the command: SIGTERM to the group, kill_grace,
  // SIGKILL. Safe from any thread, at any time, more than once.
  void Cancel();
  pid_t pgid() const { return pid_; }

 private:
  RunningCommand(pid_t pid, fs::UniqueFd out, fs::UniqueFd err, fs::UniqueFd pidfd,
                 fs::UniqueFd wake, const ExecLimits& limits, absl::Time start);

  const pid_t pid_;
  fs::UniqueFd out_;
  fs::UniqueFd err_;
  fs::UniqueFd pidfd_;
  // An eventfd Cancel() writes to, so a Wait() blocked in poll wakes.
  fs::UniqueFd wake_;
  const ExecLimits limits_;
  const absl::Time start_;
  std::atomic<bool> cancel_requested_{false};
  bool reaped_ = false;
  ExecResult result_;
};

}  // namespace lazaret::brokerd::command

#endif  // LAZARET_SERVICES_BROKERD_COMMAND_EXECUTOR_H_
