// Starting the supervisor that runs this user's service set, for `lazaret
// up`. Runs in the `lazaret` CLI, as the user. The supervisor gets a fixed
// argv and only the environment variables service_environment.h lets pass,
// never the whole environment of the shell that ran `lazaret up`; it is
// started through the CLI's one spawn core (process/spawn.h).
#ifndef LAZARET_CLIENTS_LAZARET_SERVICESET_LAUNCH_H_
#define LAZARET_CLIENTS_LAZARET_SERVICESET_LAUNCH_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"

namespace lazaret::cli::serviceset {

// How long `lazaret up` waits for every service to become healthy.
inline constexpr auto kUpTimeout = std::chrono::seconds(30);

// The supervisor's exit code when another supervisor already holds the
// lock of the runtime directory.
inline constexpr int kSupervisorAlreadyRunningExit = 3;

// The command line and environment of the supervisor for one runtime
// directory.
struct SupervisorCommand {
  std::string binary;  // <libexec_dir>/lazaret-supervisord
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "K=V", ServiceEnvironment(environ)
};

// The supervisor of `runtime_dir` from `libexec_dir`; FailedPrecondition
// saying how to get it when the binary is not there.
absl::StatusOr<SupervisorCommand> SupervisorCommandFor(const std::string& runtime_dir,
                                                       const std::string& libexec_dir);

// <runtime_dir>/supervisor.log, where a detached supervisor writes.
std::string SupervisorLogPath(const std::string& runtime_dir);

// `lazaret up --foreground`: replaces the CLI with the supervisor. Returns
// only when execve failed.
absl::Status ExecInForeground(const SupervisorCommand& command);

// Starts the supervisor detached: a session of its own (setsid), stdin on
// /dev/null, stdout and stderr appended to `log_path` (created 0600, never
// through a symlink). Returns its pid; WaitUntilUp reaps it if it exits.
absl::StatusOr<pid_t> StartDetached(const SupervisorCommand& command, const std::string& log_path);

// How a started supervisor's startup ended.
struct UpResult {
  enum class Outcome {
    kHealthy,   // every service healthy; `status` is set
    kLostRace,  // another `lazaret up` won; `status` is that set's, if it answers
    kExited,    // the supervisor exited during startup
    kTimedOut,  // not every service healthy in time; `status` is the last answer, if any
  };
  Outcome outcome = Outcome::kTimedOut;
  absl::StatusOr<supervisor::v1::GetStatusResponse> status = absl::UnavailableError("not yet");
};

// Polls the supervisor `pid` of `runtime_dir` until every service is
// healthy, it exits, or `timeout` passes.
UpResult WaitUntilUp(const std::string& runtime_dir, pid_t pid,
                     std::chrono::milliseconds timeout = kUpTimeout);

// The last `max_lines` lines of the file at `path` (a log), joined by
// newlines; empty when it cannot be read.
std::string TailOfFile(const std::string& path, size_t max_lines);

}  // namespace lazaret::cli::serviceset

#endif  // LAZARET_CLIENTS_LAZARET_SERVICESET_LAUNCH_H_
