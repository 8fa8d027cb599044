// GetNamespaceInfo: the namespace's own addresses, gateways and on-link
// service addresses, read from the kernel at the call. Runs in
// lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only); reads only.
#ifndef LAZARET_SIDECAR_NAMESPACE_INFO_H_
#define LAZARET_SIDECAR_NAMESPACE_INFO_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sidecar/policy_table.h"
#include "sidecar/rtnl_socket.h"

namespace lazaret::netrouter {

struct NamespaceInfo {
  struct Address {
    std::string interface;
    Prefix address;  // host form: /32 or /128
  };
  std::vector<Address> addresses;
  std::vector<std::string> gateways;
  std::vector<std::string> link_services;
  bool ipv6 = false;  // an IPv6 default route exists
};

absl::StatusOr<NamespaceInfo> ReadNamespaceInfo(RtnlSocket& rtnl);

// Network address + 3 of `network` (the slirp DNS forwarder's place).
Prefix LinkServiceOf(const Prefix& network);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_NAMESPACE_INFO_H_
