// What lazaret-brokerd knows of a session, from the supervisor's registry
// and lazaret-configd only, never from a caller: AttachSession names a
// session by id, and everything else (profile, workspace, the escalation
// policy) is looked up here. Also the broker's follow of the registry, so
// an ended session's endpoint dies even when nobody calls DetachSession.
// Runs in lazaret-brokerd, unprivileged.
#ifndef LAZARET_SERVICES_BROKERD_SESSION_LOOKUP_H_
#define LAZARET_SERVICES_BROKERD_SESSION_LOOKUP_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "lazaret/common/v1/common.pb.h"
#include "lazaret/config/v1/config.pb.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "services/common/session_watcher.h"

namespace lazaret::brokerd {

struct SessionFacts {
  lazaret::common::v1::SessionRecord record;
  lazaret::config::v1::ResolvedProfile profile;  // profile.escalation: the policy
  lazaret::supervisor::v1::SessionState state = lazaret::supervisor::v1::SESSION_STATE_UNSPECIFIED;
};

// GetSession from the supervisor, then ResolveProfile from configd with
// the record's workspace, explicit config and profile. INVALID_ARGUMENT for
// a malformed id, the supervisor's NOT_FOUND for an unknown one,
// FAILED_PRECONDITION for a session being reaped.
absl::StatusOr<SessionFacts> LookUpSession(const std::string& runtime_dir, const std::string& id);

struct SessionEvents {
  // A session REGISTERED or ATTACHED (the sandbox may be about to start);
  // may repeat for the same id after a reconnect.
  std::function<void(const std::string& id)> started;
  // A session that ended (also one that ended while the supervisor was
  // unreachable).
  std::function<void(const std::string& id)> ended;
};

// A started SessionWatcher on <runtime_dir>/supervisor.sock calling
// `events` with checked ids only, reconnecting every `retry`.
std::unique_ptr<SessionWatcher> WatchSessions(
    const std::string& runtime_dir, SessionEvents events,
    std::chrono::milliseconds retry = std::chrono::seconds(2));

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_SESSION_LOOKUP_H_
