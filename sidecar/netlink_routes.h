// The policy table in the kernel: table-100 routes written, removed and
// read back, the namespace's default routes, and single route lookups.
// Runs in lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only). Writes
// only routes the router built from a checked PolicySet; trusts the
// kernel's answers.
#ifndef LAZARET_SIDECAR_NETLINK_ROUTES_H_
#define LAZARET_SIDECAR_NETLINK_ROUTES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sidecar/policy_table.h"
#include "sidecar/rtnl_socket.h"

namespace lazaret::netrouter {

// The policy routing table, consulted by the pref-100 rule ahead of main.
inline constexpr uint32_t kPolicyTable = 100;
// The protocol number on every policy route ('L'), so that `ip route show
// table 100` tells the router's routes apart from anything else.
inline constexpr uint8_t kRouteProtocol = 76;

// Adds the request for `change` to `batch`: allow = `throw`, prohibit =
// `prohibit`, both scope host (a scope-universe prohibit is skipped by an
// MSG_DONTROUTE/SO_DONTROUTE lookup). Add and replace are one NEWROUTE with
// NLM_F_CREATE|NLM_F_REPLACE, so a prefix is never missing in between.
// `invalid` makes the kernel refuse this request (the test seam that
// injects a failure into the N-th step).
void AddRouteChange(NlBatch& batch, const RouteChange& change, bool invalid = false);

// The policy table as the kernel has it (both families, one dump each). A
// route in table 100 that the router cannot have made (another type) is an
// error naming it: the table is then not what any policy says.
absl::StatusOr<PolicySet> ReadPolicyTable(RtnlSocket& rtnl);

// A next hop of one of the namespace's default routes (main table).
struct Gateway {
  int family = 0;
  std::array<uint8_t, 16> address{};
  int ifindex = 0;
  std::string ToString() const;
};
absl::StatusOr<std::vector<Gateway>> DefaultGateways(RtnlSocket& rtnl);

// What `ip route get` says for one destination under the namespace's rules.
struct KernelRoute {
  int error = 0;       // errno of a refused lookup (EACCES for prohibit), else 0
  int type = 0;        // RTN_* of a successful lookup
  uint32_t table = 0;  // the table that produced it
  int oif = 0;
};
// `ipproto` 0 leaves protocol and port out of the lookup.
absl::StatusOr<KernelRoute> LookupKernelRoute(RtnlSocket& rtnl, int family,
                                              const std::array<uint8_t, 16>& address,
                                              uint8_t ipproto, uint16_t port);

// "unicast", "prohibit", "local", ... for an RTN_* type.
std::string RouteTypeName(int type);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_NETLINK_ROUTES_H_
