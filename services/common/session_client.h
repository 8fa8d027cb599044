// What a service attaching per-session state asks of Lazaret's own services
// about one session: the record from the supervisor's registry
// (SupervisorService.GetSession) and the resolved profile from
// lazaret-configd (ConfigService.ResolveProfile). Runs in the unprivileged
// services (lazaret-netpolicyd, lazaret-brokerd). The id is checked before
// it names anything; the record comes from the supervisor and the profile
// from configd, never from the caller that named the session.
#ifndef LAZARET_SERVICES_COMMON_SESSION_CLIENT_H_
#define LAZARET_SERVICES_COMMON_SESSION_CLIENT_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/common/v1/common.pb.h"
#include "lazaret/config/v1/config.pb.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"

namespace lazaret {

// Bound on each call to the supervisor or configd.
inline constexpr std::chrono::seconds kHostCallTimeout{10};

// Checks `id` (IsValidSessionId); INVALID_ARGUMENT naming it otherwise.
absl::Status CheckSessionId(const std::string& id);

// Whether a session in `state` is live: registered or attached, not ending
// or ended.
bool IsLiveSessionState(lazaret::supervisor::v1::SessionState state);

// SupervisorService.GetSession over <runtime_dir>/supervisor.sock. The
// record's id must be the one asked for.
absl::StatusOr<lazaret::supervisor::v1::SessionInfo> FetchSession(const std::string& runtime_dir,
                                                                  const std::string& id);

// ConfigService.ResolveProfile over <runtime_dir>/configd.sock with the
// record's workspace, explicit config and profile.
absl::StatusOr<lazaret::config::v1::ResolvedProfile> ResolveSessionProfile(
    const std::string& runtime_dir, const lazaret::common::v1::SessionRecord& record);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_SESSION_CLIENT_H_
