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
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/common/v1/common.pb.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/netpolicyd/compile.h"

namespace lazaret::netpolicyd {

// <runtime_dir>/sessions/<id>/router/router.sock. `id` must be checked.
std::string RouterSocketPath(const std::string& runtime_dir, const std::string& id);

// What the policy needs of the session's profile (ResolveSessionProfile,
// session_client.h): the network settings and the names the egress proxy
// intercepts.
struct ProfileInputs {
  lazaret::config::v1::NetworkPolicy network;
  std::vector<std::string> intercepted;  // InterceptedNames
};
absl::StatusOr<ProfileInputs> ResolveProfileInputs(
    const std::string& runtime_dir, const lazaret::common::v1::SessionRecord& record);

// The names whose connections go to the egress proxy: the hosts of the
// profile's secrets and of its HTTP rules, exact or "*." wildcards
// (configd checked them with CheckDomainPattern; what does not pass
// NormalizeDnsPattern here is left out), lower case, sorted, unique.
std::vector<std::string> InterceptedNames(const lazaret::config::v1::ResolvedProfile& profile);

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_HOST_INPUTS_H_
