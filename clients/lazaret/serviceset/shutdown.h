// Stopping this user's service set, for `lazaret down`. Runs in the
// `lazaret` CLI, as the user; it only asks the user's own supervisor over
// its socket and watches the supervisor's lock in the private runtime
// directory.
#ifndef LAZARET_CLIENTS_LAZARET_SERVICESET_SHUTDOWN_H_
#define LAZARET_CLIENTS_LAZARET_SERVICESET_SHUTDOWN_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"

namespace lazaret::cli::serviceset {

// The supervisor first lets live sessions end themselves (teardown and
// write-back in their own `lazaret run`), then stops the services.
inline constexpr auto kDownTimeout = std::chrono::seconds(90);

// Asks the supervisor of `runtime_dir` to shut the set down. The channel is
// closed before this returns, so the supervisor's server is not left
// waiting on an idle connection while it stops.
absl::Status RequestShutdown(const std::string& runtime_dir);

// True while some process holds the supervisor lock of `runtime_dir`.
bool SupervisorLockHeld(const std::string& runtime_dir);

// Waits until nobody holds the supervisor lock; false after `timeout`.
bool WaitUntilStopped(const std::string& runtime_dir,
                      std::chrono::milliseconds timeout = kDownTimeout);

}  // namespace lazaret::cli::serviceset

#endif  // LAZARET_CLIENTS_LAZARET_SERVICESET_SHUTDOWN_H_
