// The host's own networks, from decoded netlink records: every address of
// every host interface, and every prefix the host is directly connected to
// (an on-link route in any routing table). Pure (no I/O): host_monitor.h
// reads the records, compile.h denies what this returns. Runs in
// lazaret-netpolicyd, unprivileged; the records come from the host's
// kernel, not from a sandbox, but names are kept as the kernel gave them
// and escaped where they are shown.
#ifndef LAZARET_SERVICES_NETPOLICYD_HOST_NETWORKS_H_
#define LAZARET_SERVICES_NETPOLICYD_HOST_NETWORKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "services/netpolicyd/ip_prefix.h"

namespace lazaret::netpolicyd {

// An address of a host interface.
struct HostAddress {
  std::string interface;
  IpPrefix address;  // a host prefix
  bool operator==(const HostAddress&) const = default;
};

// One RTM_NEWADDR record, decoded.
struct AddrRecord {
  IpPrefix address;  // the local address as a host prefix
  std::string ifname;
  uint32_t flags = 0;  // IFA_F_*: any state counts (tentative, deprecated, temporary)
};

// One RTM_NEWROUTE record, decoded.
struct RouteRecord {
  IpPrefix dst = IpPrefix::Default(IpPrefix::Family::kIpv4);
  uint8_t type = 0;    // RTN_*
  uint32_t table = 0;  // RT_TABLE_* or any other table id
  // RTA_GATEWAY, RTA_VIA, or a nexthop with a gateway: not on-link.
  bool has_gateway = false;
  std::string oif_name;  // empty: no output interface
  uint8_t scope = 0;     // RT_SCOPE_*
};

// A prefix the host is directly connected to.
struct HostNetwork {
  IpPrefix prefix;
  std::string interface;
  uint32_t table = 0;
  bool operator==(const HostNetwork&) const = default;
};

// An on-link route that is deliberately not treated as a host network.
struct SkippedRoute {
  IpPrefix prefix;
  std::string interface;
  std::string reason;
  bool operator==(const SkippedRoute&) const = default;
};

// Sorted and free of duplicates, so that two snapshots of the same host
// compare equal.
struct HostNetworks {
  std::vector<HostAddress> addresses;
  std::vector<HostNetwork> on_link;
  std::vector<SkippedRoute> skipped;
  bool operator==(const HostNetworks&) const = default;
};

// On-link routes shorter than these are tunnel catch-alls (wg-quick's and
// OpenVPN's 0.0.0.0/1 and 128.0.0.0/1): denying them would close the whole
// internet whenever such a VPN is up.
inline constexpr int kShortestIpv4HostNetwork = 8;
inline constexpr int kShortestIpv6HostNetwork = 16;

// The rules (docs/networking.md, "The host's own networks"):
//   - every address counts, whatever its flags;
//   - a unicast route in any table without a gateway is an on-link prefix
//     (a point-to-point peer's /32 is one too);
//   - local, broadcast, anycast, multicast, blackhole, unreachable and
//     prohibit routes are not networks and are ignored;
//   - IPv6 link-local prefixes are ignored (always denied already);
//   - /0 and prefixes shorter than the limits above are skipped and listed.
HostNetworks ExtractHostNetworks(const std::vector<AddrRecord>& addresses,
                                 const std::vector<RouteRecord>& routes);

// "main", "local", "default" or the number.
std::string RouteTableName(uint32_t table);

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_HOST_NETWORKS_H_
