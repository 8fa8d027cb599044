#include "sidecar/namespace_info.h"

#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "sidecar/netlink_routes.h"

namespace lazaret::netrouter {
namespace {

struct RawAddress {
  int ifindex;
  int scope;
  Prefix prefix;  // the address with the prefix length it was configured with
};

absl::StatusOr<std::vector<RawAddress>> Addresses(RtnlSocket& rtnl) {
  std::vector<RawAddress> out;
  ifaddrmsg ifa{};
  NlRequest req(RTM_GETADDR, NLM_F_REQUEST);
  req.Header(&ifa, sizeof(ifa));
  LAZ_RETURN_IF_ERROR(rtnl.Dump(req, [&](const nlmsghdr* h) {
    if (h->nlmsg_type != RTM_NEWADDR) return absl::OkStatus();
    const auto* a = static_cast<const ifaddrmsg*>(NLMSG_DATA(h));
    if (a->ifa_family != AF_INET && a->ifa_family != AF_INET6) return absl::OkStatus();
    RawAddress r{static_cast<int>(a->ifa_index), a->ifa_scope, {}};
    r.prefix.family = a->ifa_family;
    r.prefix.length = a->ifa_prefixlen;
    const size_t alen = a->ifa_family == AF_INET ? 4 : 16;
    const rtattr* local = nullptr;
    const rtattr* address = nullptr;
    int len = static_cast<int>(IFA_PAYLOAD(h));
    for (auto* at = IFA_RTA(const_cast<ifaddrmsg*>(a)); RTA_OK(at, len); at = RTA_NEXT(at, len)) {
      if (at->rta_type == IFA_LOCAL) local = at;
      if (at->rta_type == IFA_ADDRESS) address = at;
    }
    // IFA_LOCAL is the interface's own address (IFA_ADDRESS is the peer's
    // on point-to-point links); IPv6 reports only IFA_ADDRESS.
    const rtattr* own = local != nullptr ? local : address;
    if (own == nullptr || RTA_PAYLOAD(own) < alen) return absl::OkStatus();
    std::memcpy(r.prefix.bytes.data(), RTA_DATA(own), alen);
    out.push_back(r);
    return absl::OkStatus();
  }));
  return out;
}

std::string InterfaceName(int ifindex) {
  char name[IF_NAMESIZE] = {};
  if (if_indextoname(static_cast<unsigned>(ifindex), name) == nullptr) {
    return absl::StrCat("if", ifindex);
  }
  return name;
}

Prefix Masked(Prefix p) {
  for (int i = 0; i < p.address_bytes(); ++i) {
    const int bits = p.length - i * 8;
    if (bits >= 8) continue;
    p.bytes[i] = bits <= 0 ? 0 : static_cast<uint8_t>(p.bytes[i] & (0xff << (8 - bits)));
  }
  return p;
}

std::string AddressText(const Prefix& p) {
  const std::string s = p.ToString();
  return s.substr(0, s.find('/'));
}

}  // namespace

Prefix LinkServiceOf(const Prefix& network) {
  Prefix p = Masked(network);
  // +3 on the last byte: the networks this applies to are /30 or wider.
  p.bytes[p.address_bytes() - 1] = static_cast<uint8_t>(p.bytes[p.address_bytes() - 1] + 3);
  p.length = p.max_length();
  return p;
}

absl::StatusOr<NamespaceInfo> ReadNamespaceInfo(RtnlSocket& rtnl) {
  NamespaceInfo info;
  LAZ_ASSIGN_OR_RETURN(std::vector<Gateway> gateways, DefaultGateways(rtnl));
  std::vector<int> uplinks;
  for (const Gateway& g : gateways) {
    info.gateways.push_back(g.ToString());
    if (g.family == AF_INET6) info.ipv6 = true;
    uplinks.push_back(g.ifindex);
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<RawAddress> addresses, Addresses(rtnl));
  for (const RawAddress& a : addresses) {
    NamespaceInfo::Address out{InterfaceName(a.ifindex), a.prefix};
    out.address.length = a.prefix.max_length();
    info.addresses.push_back(out);
    // slirp4netns puts its gateway at network+2 and its DNS forwarder at
    // network+3 (10.0.2.3, fd00::3) and answers neighbour resolution for
    // exactly those; the forwarder would resolve names for the sandbox
    // past the router's relay (and leak them to the host's resolver), so
    // policy must deny it by its exact address, which it can only do if
    // the router names it. Only the links that carry a default route
    // (slirp's tap) and their global networks count.
    const bool uplink = std::find(uplinks.begin(), uplinks.end(), a.ifindex) != uplinks.end();
    if (!uplink || a.scope != RT_SCOPE_UNIVERSE || a.prefix.length > a.prefix.max_length() - 2) {
      continue;
    }
    const std::string service = AddressText(LinkServiceOf(a.prefix));
    if (std::find(info.link_services.begin(), info.link_services.end(), service) ==
        info.link_services.end()) {
      info.link_services.push_back(service);
    }
  }
  return info;
}

}  // namespace lazaret::netrouter
