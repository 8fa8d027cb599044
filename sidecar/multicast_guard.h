// Multicast egress guard of lazaret-netrouter (inside the sidecar,
// CAP_NET_ADMIN only). The kernel sends multicast out of a named interface
// (IP_MULTICAST_IF, SO_BINDTODEVICE, and any 224.0.0.x) without consulting
// the policy rules or table, and IPv6 multicast takes the local table's
// ff00::/8 route at pref 0; slirp4netns forwards IPv4 multicast and IPv6
// multicast of a wider scope than link-local to the host's network when
// the TTL or hop limit is 2 or more (measured). So every non-loopback link
// gets a root htb qdisc whose u32 filters send IPv4 to 224.0.0.0/4 and
// IPv6 to ff00::/8 into a class whose pfifo holds nothing (every packet
// dropped); ICMPv6 passes (neighbour discovery, which the router's own
// gateway pinning uses; slirp answers ICMPv6 only for its own addresses),
// and every other packet takes htb's direct queue, unshaped. Trusts
// nothing from the sandbox; its only input is the list of links.
#ifndef LAZARET_SIDECAR_MULTICAST_GUARD_H_
#define LAZARET_SIDECAR_MULTICAST_GUARD_H_

#include "absl/status/status.h"
#include "sidecar/rtnl_socket.h"

namespace lazaret::netrouter {

// Installs the guard on every non-loopback link (replacing its root qdisc).
absl::Status DropMulticastEgress(nl_sock* sk);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_MULTICAST_GUARD_H_
