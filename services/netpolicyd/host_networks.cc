#include "services/netpolicyd/host_networks.h"

#include <linux/rtnetlink.h>

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace lazaret::netpolicyd {
namespace {

const IpPrefix& Ipv6LinkLocal() {
  static const IpPrefix* prefix = new IpPrefix(*IpPrefix::Parse("fe80::/10"));
  return *prefix;
}

template <typename T>
void SortUnique(std::vector<T>& v, auto key) {
  std::sort(v.begin(), v.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

std::string RouteTableName(uint32_t table) {
  switch (table) {
    case RT_TABLE_MAIN:
      return "main";
    case RT_TABLE_LOCAL:
      return "local";
    case RT_TABLE_DEFAULT:
      return "default";
    default:
      return absl::StrCat(table);
  }
}

HostNetworks ExtractHostNetworks(const std::vector<AddrRecord>& addresses,
                                 const std::vector<RouteRecord>& routes) {
  HostNetworks out;
  for (const auto& a : addresses) {
    if (!a.address.is_host()) continue;
    out.addresses.push_back({a.ifname, a.address});
  }
  for (const auto& r : routes) {
    if (r.type != RTN_UNICAST || r.has_gateway) continue;
    if (!r.dst.is_ipv4() && Ipv6LinkLocal().Contains(r.dst)) continue;
    const int shortest = r.dst.is_ipv4() ? kShortestIpv4HostNetwork : kShortestIpv6HostNetwork;
    if (r.dst.length() == 0) {
      out.skipped.push_back({r.dst, r.oif_name,
                             "a default route without a gateway: denying it would close "
                             "everything"});
    } else if (r.dst.length() < shortest) {
      out.skipped.push_back(
          {r.dst, r.oif_name,
           absl::StrCat("shorter than /", shortest,
                        ": a tunnel's catch-all, denying it would close the internet")});
    } else {
      out.on_link.push_back({r.dst, r.oif_name, r.table});
    }
  }
  SortUnique(out.addresses,
             [](const HostAddress& a) { return std::make_tuple(a.address, a.interface); });
  SortUnique(out.on_link,
             [](const HostNetwork& n) { return std::make_tuple(n.prefix, n.interface, n.table); });
  SortUnique(out.skipped, [](const SkippedRoute& s) {
    return std::make_tuple(s.prefix, s.interface, s.reason);
  });
  return out;
}

}  // namespace lazaret::netpolicyd
