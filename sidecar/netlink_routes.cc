#include "sidecar/netlink_routes.h"

#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::netrouter {
namespace {

rtattr* FindAttr(const nlmsghdr* h, int type) {
  const auto* r = static_cast<const rtmsg*>(NLMSG_DATA(h));
  int len = static_cast<int>(h->nlmsg_len) - NLMSG_LENGTH(sizeof(rtmsg));
  for (auto* a = RTM_RTA(const_cast<rtmsg*>(r)); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if (a->rta_type == type) return a;
  }
  return nullptr;
}

uint32_t TableOf(const nlmsghdr* h) {
  if (const rtattr* t = FindAttr(h, RTA_TABLE); t != nullptr && RTA_PAYLOAD(t) >= 4) {
    uint32_t v;
    std::memcpy(&v, RTA_DATA(t), sizeof(v));
    return v;
  }
  return static_cast<const rtmsg*>(NLMSG_DATA(h))->rtm_table;
}

// Copies an address attribute of `size` bytes; false when absent or short.
bool AddressAttr(const nlmsghdr* h, int type, size_t size, std::array<uint8_t, 16>* out) {
  const rtattr* a = FindAttr(h, type);
  if (a == nullptr || RTA_PAYLOAD(a) < size) return false;
  std::memcpy(out->data(), RTA_DATA(a), size);
  return true;
}

absl::Status DumpFamily(RtnlSocket& rtnl, int family, uint32_t table,
                        const std::function<absl::Status(const nlmsghdr*)>& each) {
  rtmsg r{};
  r.rtm_family = static_cast<unsigned char>(family);
  r.rtm_table =
      static_cast<unsigned char>(table < 256 ? table : static_cast<uint32_t>(RT_TABLE_UNSPEC));
  NlRequest req(RTM_GETROUTE, NLM_F_REQUEST);
  req.Header(&r, sizeof(r)).U32(RTA_TABLE, table);
  if (!req.ok()) return absl::ResourceExhaustedError("building a route dump request");
  return rtnl.Dump(req, each);
}

}  // namespace

std::string RouteTypeName(int type) {
  switch (type) {
    case RTN_UNICAST:
      return "unicast";
    case RTN_LOCAL:
      return "local";
    case RTN_BROADCAST:
      return "broadcast";
    case RTN_ANYCAST:
      return "anycast";
    case RTN_MULTICAST:
      return "multicast";
    case RTN_BLACKHOLE:
      return "blackhole";
    case RTN_UNREACHABLE:
      return "unreachable";
    case RTN_PROHIBIT:
      return "prohibit";
    case RTN_THROW:
      return "throw";
    default:
      return absl::StrCat("type ", type);
  }
}

void AddRouteChange(NlBatch& batch, const RouteChange& change, bool invalid) {
  const Prefix& p = change.route.prefix;
  const bool remove = change.kind == RouteChange::Kind::kRemove;
  rtmsg r{};
  r.rtm_family = static_cast<unsigned char>(p.family);
  // An impossible prefix length: the kernel refuses it with EINVAL.
  r.rtm_dst_len = static_cast<unsigned char>(invalid ? p.max_length() + 1 : p.length);
  r.rtm_table = static_cast<unsigned char>(kPolicyTable);
  r.rtm_type = change.route.action == Action::kAllow ? RTN_THROW : RTN_PROHIBIT;
  if (remove) {
    // Match the route by destination and type, whatever scope it reads back.
    r.rtm_scope = RT_SCOPE_NOWHERE;
  } else {
    r.rtm_protocol = kRouteProtocol;
    r.rtm_scope = RT_SCOPE_HOST;
  }
  NlRequest req(remove ? RTM_DELROUTE : RTM_NEWROUTE,
                NLM_F_REQUEST | (remove ? 0 : NLM_F_CREATE | NLM_F_REPLACE));
  req.Header(&r, sizeof(r)).U32(RTA_TABLE, kPolicyTable);
  if (p.length > 0) req.Attr(RTA_DST, p.bytes.data(), p.address_bytes());
  batch.Add(req);
}

absl::StatusOr<PolicySet> ReadPolicyTable(RtnlSocket& rtnl) {
  std::vector<PolicyRoute> routes;
  absl::Status foreign;
  auto each = [&](const nlmsghdr* h) -> absl::Status {
    if (h->nlmsg_type != RTM_NEWROUTE) return absl::OkStatus();
    const auto* r = static_cast<const rtmsg*>(NLMSG_DATA(h));
    if (TableOf(h) != kPolicyTable) return absl::OkStatus();
    PolicyRoute route;
    route.prefix.family = r->rtm_family;
    route.prefix.length = r->rtm_dst_len;
    if (r->rtm_dst_len > 0) {
      AddressAttr(h, RTA_DST, route.prefix.address_bytes(), &route.prefix.bytes);
    }
    if (r->rtm_type == RTN_THROW) {
      route.action = Action::kAllow;
    } else if (r->rtm_type == RTN_PROHIBIT) {
      route.action = Action::kProhibit;
    } else {
      if (foreign.ok()) {
        foreign = absl::InternalError(
            absl::StrCat("table ", kPolicyTable, " holds a ", RouteTypeName(r->rtm_type),
                         " route to ", route.prefix.ToString(), " that no policy installs"));
      }
      return absl::OkStatus();
    }
    routes.push_back(route);
    return absl::OkStatus();
  };
  LAZ_RETURN_IF_ERROR(DumpFamily(rtnl, AF_INET, kPolicyTable, each));
  LAZ_RETURN_IF_ERROR(DumpFamily(rtnl, AF_INET6, kPolicyTable, each));
  LAZ_RETURN_IF_ERROR(foreign);
  absl::StatusOr<PolicySet> set = MakePolicySet(std::move(routes));
  if (!set.ok()) {
    // Two routes for one prefix (another metric), or a family without a
    // default: still a table, but not one that a policy describes.
    return absl::InternalError(
        absl::StrCat("the policy table as read back: ", set.status().message()));
  }
  return set;
}

std::string Gateway::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, address.data(), buf, sizeof(buf));
  return buf;
}

absl::StatusOr<std::vector<Gateway>> DefaultGateways(RtnlSocket& rtnl) {
  std::vector<Gateway> out;
  auto each = [&](const nlmsghdr* h) -> absl::Status {
    if (h->nlmsg_type != RTM_NEWROUTE) return absl::OkStatus();
    const auto* r = static_cast<const rtmsg*>(NLMSG_DATA(h));
    if (TableOf(h) != RT_TABLE_MAIN || r->rtm_dst_len != 0 || r->rtm_type != RTN_UNICAST) {
      return absl::OkStatus();
    }
    Gateway g;
    g.family = r->rtm_family;
    if (!AddressAttr(h, RTA_GATEWAY, g.family == AF_INET ? 4 : 16, &g.address)) {
      return absl::OkStatus();  // a device route: no next hop to pin
    }
    if (const rtattr* oif = FindAttr(h, RTA_OIF); oif != nullptr && RTA_PAYLOAD(oif) >= 4) {
      std::memcpy(&g.ifindex, RTA_DATA(oif), sizeof(g.ifindex));
    }
    out.push_back(g);
    return absl::OkStatus();
  };
  LAZ_RETURN_IF_ERROR(DumpFamily(rtnl, AF_INET, RT_TABLE_MAIN, each));
  LAZ_RETURN_IF_ERROR(DumpFamily(rtnl, AF_INET6, RT_TABLE_MAIN, each));
  return out;
}

absl::StatusOr<KernelRoute> LookupKernelRoute(RtnlSocket& rtnl, int family,
                                              const std::array<uint8_t, 16>& address,
                                              uint8_t ipproto, uint16_t port) {
  rtmsg r{};
  r.rtm_family = static_cast<unsigned char>(family);
  r.rtm_dst_len = family == AF_INET ? 32 : 128;
  r.rtm_flags = RTM_F_LOOKUP_TABLE;
  NlRequest req(RTM_GETROUTE, NLM_F_REQUEST);
  req.Header(&r, sizeof(r)).Attr(RTA_DST, address.data(), family == AF_INET ? 4 : 16);
  if (ipproto != 0) req.U8(RTA_IP_PROTO, ipproto).U16(RTA_DPORT, htons(port));
  if (!req.ok()) return absl::ResourceExhaustedError("building a route lookup");
  KernelRoute out;
  LAZ_ASSIGN_OR_RETURN(std::string reply, rtnl.Ask(req, &out.error));
  if (out.error != 0) return out;
  const auto* h = reinterpret_cast<const nlmsghdr*>(reply.data());
  if (h->nlmsg_type != RTM_NEWROUTE) return absl::InternalError("unexpected route lookup reply");
  out.type = static_cast<const rtmsg*>(NLMSG_DATA(h))->rtm_type;
  out.table = TableOf(h);
  if (const rtattr* oif = FindAttr(h, RTA_OIF); oif != nullptr && RTA_PAYLOAD(oif) >= 4) {
    std::memcpy(&out.oif, RTA_DATA(oif), sizeof(out.oif));
  }
  return out;
}

}  // namespace lazaret::netrouter
