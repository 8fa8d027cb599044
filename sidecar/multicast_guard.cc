#include "sidecar/multicast_guard.h"

#include <libnl3/netlink/route/class.h>
#include <libnl3/netlink/route/classifier.h>
#include <libnl3/netlink/route/cls/u32.h>
#include <libnl3/netlink/route/link.h>
#include <libnl3/netlink/route/qdisc.h>
#include <libnl3/netlink/route/qdisc/fifo.h>
#include <libnl3/netlink/route/qdisc/htb.h>
#include <libnl3/netlink/route/tc.h>
#include <linux/if_ether.h>
#include <linux/pkt_sched.h>
#include <net/if.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::netrouter {
namespace {

constexpr uint32_t kRoot = TC_HANDLE(1, 0);  // the htb qdisc; as a classid: direct
constexpr uint32_t kDropClass = TC_HANDLE(1, 2);
constexpr uint32_t kDropQdisc = TC_HANDLE(2, 0);

struct QdiscDeleter {
  void operator()(rtnl_qdisc* q) const { rtnl_qdisc_put(q); }
};
struct ClassDeleter {
  void operator()(rtnl_class* c) const { rtnl_class_put(c); }
};
struct ClsDeleter {
  void operator()(rtnl_cls* c) const { rtnl_cls_put(c); }
};

// One u32 filter: `value` under `mask` at byte `offset` of the network
// header, for `protocol`, sends the packet to `classid`.
absl::Status AddFilter(nl_sock* sk, int ifindex, uint16_t protocol, uint16_t prio, uint8_t value,
                       uint8_t mask, int offset, uint32_t classid, const std::string& what) {
  std::unique_ptr<rtnl_cls, ClsDeleter> cls(rtnl_cls_alloc());
  if (cls == nullptr) return absl::ResourceExhaustedError("rtnl_cls_alloc");
  rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(cls.get()), kRoot);
  if (int err = rtnl_tc_set_kind(TC_CAST(cls.get()), "u32"); err < 0) {
    return NlStatus("selecting the u32 classifier", err);
  }
  rtnl_cls_set_protocol(cls.get(), protocol);
  rtnl_cls_set_prio(cls.get(), prio);
  if (int err = rtnl_u32_add_key_uint8(cls.get(), value, mask, offset, 0); err < 0) {
    return NlStatus(absl::StrCat("matching ", what), err);
  }
  rtnl_u32_set_classid(cls.get(), classid);
  // A match decides (TC_U32_TERMINAL); without it u32 classifies nothing.
  if (int err = rtnl_u32_set_cls_terminal(cls.get()); err < 0) {
    return NlStatus(absl::StrCat("making the filter for ", what, " final"), err);
  }
  if (int err = rtnl_cls_add(sk, cls.get(), NLM_F_CREATE | NLM_F_EXCL); err < 0) {
    return NlStatus(absl::StrCat("adding the filter for ", what), err);
  }
  return absl::OkStatus();
}

absl::Status GuardLink(nl_sock* sk, int ifindex) {
  std::unique_ptr<rtnl_qdisc, QdiscDeleter> root(rtnl_qdisc_alloc());
  if (root == nullptr) return absl::ResourceExhaustedError("rtnl_qdisc_alloc");
  rtnl_tc_set_ifindex(TC_CAST(root.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(root.get()), TC_H_ROOT);
  rtnl_tc_set_handle(TC_CAST(root.get()), kRoot);
  if (int err = rtnl_tc_set_kind(TC_CAST(root.get()), "htb"); err < 0) {
    return NlStatus("selecting the htb qdisc", err);
  }
  // No default class: what no filter classifies goes to the direct queue.
  if (int err = rtnl_qdisc_add(sk, root.get(), NLM_F_CREATE | NLM_F_REPLACE); err < 0) {
    return NlStatus("adding the root htb qdisc", err);
  }
  std::unique_ptr<rtnl_class, ClassDeleter> drop(rtnl_class_alloc());
  if (drop == nullptr) return absl::ResourceExhaustedError("rtnl_class_alloc");
  rtnl_tc_set_ifindex(TC_CAST(drop.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(drop.get()), kRoot);
  rtnl_tc_set_handle(TC_CAST(drop.get()), kDropClass);
  if (int err = rtnl_tc_set_kind(TC_CAST(drop.get()), "htb"); err < 0) {
    return NlStatus("selecting the htb class", err);
  }
  rtnl_htb_set_rate(drop.get(), 1);
  if (int err = rtnl_class_add(sk, drop.get(), NLM_F_CREATE); err < 0) {
    return NlStatus("adding the dropping class", err);
  }
  std::unique_ptr<rtnl_qdisc, QdiscDeleter> fifo(rtnl_qdisc_alloc());
  if (fifo == nullptr) return absl::ResourceExhaustedError("rtnl_qdisc_alloc");
  rtnl_tc_set_ifindex(TC_CAST(fifo.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(fifo.get()), kDropClass);
  rtnl_tc_set_handle(TC_CAST(fifo.get()), kDropQdisc);
  if (int err = rtnl_tc_set_kind(TC_CAST(fifo.get()), "pfifo"); err < 0) {
    return NlStatus("selecting the pfifo qdisc", err);
  }
  rtnl_qdisc_fifo_set_limit(fifo.get(), 0);  // holds nothing: drops all
  if (int err = rtnl_qdisc_add(sk, fifo.get(), NLM_F_CREATE); err < 0) {
    return NlStatus("adding the empty pfifo", err);
  }
  // IPv6 next header 58 (ICMPv6, neighbour discovery): direct. Offset 6.
  LAZ_RETURN_IF_ERROR(AddFilter(sk, ifindex, ETH_P_IPV6, 1, 58, 0xff, 6, kRoot, "ICMPv6"));
  // IPv6 destination ff00::/8: dropped. Offset 24 is its first byte.
  LAZ_RETURN_IF_ERROR(
      AddFilter(sk, ifindex, ETH_P_IPV6, 2, 0xff, 0xff, 24, kDropClass, "IPv6 multicast"));
  // IPv4 destination 224.0.0.0/4: dropped. Offset 16 is its first byte.
  return AddFilter(sk, ifindex, ETH_P_IP, 3, 0xe0, 0xf0, 16, kDropClass, "IPv4 multicast");
}

}  // namespace

absl::Status DropMulticastEgress(nl_sock* sk) {
  nl_cache* cache = nullptr;
  if (int err = rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache); err < 0) {
    return NlStatus("listing links", err);
  }
  std::vector<std::pair<int, std::string>> links;
  for (nl_object* o = nl_cache_get_first(cache); o != nullptr; o = nl_cache_get_next(o)) {
    auto* link = reinterpret_cast<rtnl_link*>(o);
    if ((rtnl_link_get_flags(link) & IFF_LOOPBACK) != 0) continue;
    links.emplace_back(rtnl_link_get_ifindex(link), rtnl_link_get_name(link));
  }
  nl_cache_free(cache);
  for (const auto& [ifindex, name] : links) {
    if (absl::Status s = GuardLink(sk, ifindex); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("guarding ", name, " against multicast egress: ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace lazaret::netrouter
