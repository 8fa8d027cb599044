// Reaping what a dead session left - the `lazaret clean` of a session
// whose `lazaret run` was killed or crashed, run by the developer or by the
// supervisor's reaper (services/supervisor/reaper.h) through `lazaret clean
// --session ID`. In the order that keeps the agent's work: its containers
// first (fast: by name, one podman call for the sidecar and everything in
// its network namespace), then lazaret-netpolicyd's and lazaret-brokerd's
// DetachSession (best effort), the Git Shadow write-back and the
// end-of-session workspace scan it never did, and its directory last - so
// a reap cut short is simply done again. Runs in the `lazaret` CLI, as the
// user (root for rootful podman). A session whose directory lock is held
// belongs to a live `lazaret run` and is never reaped here. What the
// sandbox wrote (the Git Shadow's state, the workspace, the snapshot in
// the session directory) is read only through gitshadow/ and
// workspace/, which distrust it.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_REAP_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_REAP_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "services/sessiond/session/listing.h"

namespace lazaret::cli::session {

// Where the reap reports what it did, one line at a time (without a
// newline): "session <id> (profile <p>):", then indented lines.
using LineSink = std::function<void(const std::string& line)>;

// Removes what the dead session `view` left. False when something could
// not be removed (the session directory then stays, for the next clean).
bool ReapSession(const SessionView& view, const LineSink& out);

enum class CleanOutcome {
  kReaped,
  kReapFailed,   // something remains; run clean again
  kNothingLeft,  // no directory and no container of this instance
  kOwnerAlive,   // the session belongs to a live `lazaret run`
};

// `lazaret clean --session ID`: the one session `id` (a valid session id),
// if its owner is dead. An error when the sessions cannot be listed.
absl::StatusOr<CleanOutcome> CleanDeadSession(const std::string& runtime_dir, const std::string& id,
                                              const LineSink& out);

struct CleanSummary {
  int reaped = 0;  // dead sessions reaped (or tried)
  int live = 0;    // sessions of a live `lazaret run`, left alone
  bool ok = true;  // every reap succeeded
};

// `lazaret clean`: every dead session of this runtime directory.
absl::StatusOr<CleanSummary> CleanDeadSessions(const std::string& runtime_dir, const LineSink& out);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_REAP_H_
