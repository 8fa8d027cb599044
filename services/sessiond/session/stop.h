// `lazaret stop` of a live session: the owning `lazaret run` tears its
// session down itself (and imports the agent's commits); the supervisor's
// registry signals it through the pidfd it holds - never a pid read from a
// file. Runs in the `lazaret` CLI, as the user.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_STOP_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_STOP_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "services/sessiond/session/listing.h"

namespace lazaret::cli::session {

// How long `lazaret stop` waits for the owner to finish its teardown.
inline constexpr auto kStopTimeout = std::chrono::seconds(30);

// Asks the owner of the live session `view` to end it (through the
// supervisor), then waits until its directory lock is released. The error
// message starts with "session <id>".
absl::Status StopLiveSession(const std::string& runtime_dir, const SessionView& view);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_STOP_H_
