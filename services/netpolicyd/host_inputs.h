// What lazaret-netpolicyd asks of the host for one session: the session
// record from the supervisor's registry, the session's network settings
// from lazaret-configd, the host's interface addresses, and the path of the
// session's router socket. Runs in lazaret-netpolicyd, unprivileged. The
// supervisor and configd are Lazaret's own services on the private runtime
// directory; every path is derived here from a validated session id, never
// taken from a request or from a reply.
#ifndef LAZARET_SERVICES_NETPOLICYD_HOST_INPUTS_H_
#define LAZARET_SERVICES_NETPOLICYD_HOST_INPUTS_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/config/v1/config.pb.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "services/netpolicyd/compile.h"

namespace lazaret::netpolicyd {

inline constexpr std::chrono::seconds kHostCallTimeout{10};

// Checks `id` (IsValidSessionId); INVALID_ARGUMENT naming it otherwise.
absl::Status CheckSessionId(const std::string& id);

// <runtime_dir>/sessions/<id>/router/router.sock. `id` must be checked.
std::string RouterSocketPath(const std::string& runtime_dir, const std::string& id);

// SupervisorService.GetSession over <runtime_dir>/supervisor.sock. The
// record's id must be the one asked for.
absl::StatusOr<lazaret::supervisor::v1::SessionInfo> FetchSession(const std::string& runtime_dir,
                                                                  const std::string& id);

// ConfigService.ResolveProfile over <runtime_dir>/configd.sock with the
// record's workspace, explicit config and profile.
absl::StatusOr<lazaret::config::v1::NetworkPolicy> ResolveNetwork(
    const std::string& runtime_dir, const lazaret::common::v1::SessionRecord& record);

// Every IPv4 and IPv6 address of every host interface, loopback included
// (getifaddrs), as host prefixes.
absl::StatusOr<std::vector<HostAddress>> ReadHostAddresses();

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_HOST_INPUTS_H_
