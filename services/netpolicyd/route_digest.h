// The router's digest of a route table, the one definition of it outside
// the router (sidecar/policy_table.h Digest computes the same from the
// table it reads back): lowercase hex SHA-256 over "allow CIDR\n" /
// "prohibit CIDR\n" lines sorted by family, address bytes and prefix
// length. lazaret-netpolicyd checks ApplyPolicy's answer with it; `lazaret
// net show` checks the routes netpolicyd read back. Pure; a route whose
// prefix does not parse or that has no action is refused.
#ifndef LAZARET_SERVICES_NETPOLICYD_ROUTE_DIGEST_H_
#define LAZARET_SERVICES_NETPOLICYD_ROUTE_DIGEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "lazaret/netrouter/v1/netrouter.pb.h"

namespace lazaret::netpolicyd {

absl::StatusOr<std::string> RoutesDigest(const std::vector<lazaret::netrouter::v1::Route>& routes);
absl::StatusOr<std::string> RoutesDigest(
    const google::protobuf::RepeatedPtrField<lazaret::netrouter::v1::Route>& routes);

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_ROUTE_DIGEST_H_
