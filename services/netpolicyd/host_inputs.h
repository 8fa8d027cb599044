// What lazaret-netpolicyd asks of the host for one session beyond the
// record and profile (services/common/session_client.h): the session's
// network settings and the path of the session's router socket (the
// host's addresses and networks come from host_monitor.h). Runs in
// lazaret-netpolicyd, unprivileged. The supervisor and configd are Lazaret's own services on the private runtime
// directory; every path is derived here from a validated session id, never
// taken from a request or from a reply.
#ifndef LAZARET_SERVICES_NETPOLICYD_HOST_INPUTS_H_
#define LAZARET_SERVICES_NETPOLICYD_HOST_INPUTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "lazaret/common/v1/common.pb.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/netpolicyd/compile.h"

namespace lazaret::netpolicyd {

// <runtime_dir>/sessions/<id>/router/router.sock. `id` must be checked.
std::string RouterSocketPath(const std::string& runtime_dir, const std::string& id);

// The network part of ResolveSessionProfile (session_client.h).
absl::StatusOr<lazaret::config::v1::NetworkPolicy> ResolveNetwork(
    const std::string& runtime_dir, const lazaret::common::v1::SessionRecord& record);

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_HOST_INPUTS_H_
