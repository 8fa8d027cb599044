#include "sidecar/policy_rules.h"

#include <arpa/inet.h>
#include <linux/fib_rules.h>
#include <sys/socket.h>
// Spelled with libnl3/ so the header is found where Debian installs it.
#include <libnl3/netlink/addr.h>
#include <libnl3/netlink/route/rule.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "sidecar/netlink_routes.h"

namespace lazaret::netrouter {
namespace {

struct RulePut {
  void operator()(rtnl_rule* r) const { rtnl_rule_put(r); }
};
using RulePtr = std::unique_ptr<rtnl_rule, RulePut>;

RulePtr NewRule(int family, uint32_t priority, uint8_t action) {
  RulePtr rule(rtnl_rule_alloc());
  if (rule == nullptr) return rule;
  rtnl_rule_set_family(rule.get(), family);
  rtnl_rule_set_prio(rule.get(), priority);
  rtnl_rule_set_action(rule.get(), action);
  return rule;
}

const char* FamilyName(int family) { return family == AF_INET ? "IPv4" : "IPv6"; }

absl::Status AddRule(nl_sock* sk, rtnl_rule* rule, const std::string& what) {
  // NLM_F_EXCL: without it the kernel adds a second identical rule.
  const int err = rtnl_rule_add(sk, rule, NLM_F_CREATE | NLM_F_EXCL);
  if (err < 0 && err != -NLE_EXIST) return NlStatus(absl::StrCat("adding ", what), err);
  return absl::OkStatus();
}

bool PrefixContains(const std::array<uint8_t, 16>& prefix, int length,
                    const std::array<uint8_t, 16>& address) {
  for (int bit = 0; bit < length; ++bit) {
    const uint8_t mask = static_cast<uint8_t>(0x80 >> (bit % 8));
    if ((prefix[bit / 8] & mask) != (address[bit / 8] & mask)) return false;
  }
  return true;
}

std::string FormatPrefix(int family, const std::array<uint8_t, 16>& address, int length) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, address.data(), text, sizeof(text));
  return absl::StrCat(text, "/", length);
}

const char* ProtoName(uint8_t ipproto) {
  return ipproto == 6 ? "tcp" : ipproto == 17 ? "udp" : "ipproto";
}

}  // namespace

absl::Status InstallPolicyRules(nl_sock* sk) {
  for (int family : {AF_INET, AF_INET6}) {
    for (const DnsPortRule& d : kDnsPortRules) {
      RulePtr rule = NewRule(family, kDnsRulePriority, FR_ACT_PROHIBIT);
      if (rule == nullptr) return absl::ResourceExhaustedError("rtnl_rule_alloc");
      rtnl_rule_set_ipproto(rule.get(), d.ipproto);
      rtnl_rule_set_dport(rule.get(), d.port);
      LAZ_RETURN_IF_ERROR(AddRule(sk, rule.get(),
                                  absl::StrCat("the ", FamilyName(family), " rule refusing ",
                                               ProtoName(d.ipproto), " port ", d.port)));
    }
    if (family == AF_INET6) {
      for (const char* prefix : kScopedIpv6Prefixes) {
        RulePtr rule = NewRule(family, kScopedRulePriority, FR_ACT_PROHIBIT);
        if (rule == nullptr) return absl::ResourceExhaustedError("rtnl_rule_alloc");
        nl_addr* dst = nullptr;
        if (int err = nl_addr_parse(prefix, AF_INET6, &dst); err < 0) {
          return NlStatus(absl::StrCat("parsing ", prefix), err);
        }
        const int err = rtnl_rule_set_dst(rule.get(), dst);
        nl_addr_put(dst);
        if (err < 0) return NlStatus(absl::StrCat("setting the destination ", prefix), err);
        LAZ_RETURN_IF_ERROR(
            AddRule(sk, rule.get(), absl::StrCat("the IPv6 rule refusing ", prefix)));
      }
    }
    RulePtr lookup = NewRule(family, kPolicyRulePriority, FR_ACT_TO_TBL);
    if (lookup == nullptr) return absl::ResourceExhaustedError("rtnl_rule_alloc");
    rtnl_rule_set_table(lookup.get(), kPolicyTable);
    LAZ_RETURN_IF_ERROR(
        AddRule(sk, lookup.get(),
                absl::StrCat("the ", FamilyName(family), " rule looking up table ", kPolicyTable)));
  }
  return absl::OkStatus();
}

absl::Status SetFailClosed(nl_sock* sk, bool closed) {
  absl::Status status;
  for (int family : {AF_INET, AF_INET6}) {
    RulePtr rule = NewRule(family, kFailClosedRulePriority, FR_ACT_PROHIBIT);
    if (rule == nullptr) return absl::ResourceExhaustedError("rtnl_rule_alloc");
    const std::string what = absl::StrCat("the ", FamilyName(family), " fail-closed rule (pref ",
                                          kFailClosedRulePriority, ")");
    if (closed) {
      // Both families are attempted even when one fails.
      status.Update(AddRule(sk, rule.get(), what));
      continue;
    }
    // Remove every copy (an older router may have added more than one).
    for (int i = 0; i < 16; ++i) {
      const int err = rtnl_rule_delete(sk, rule.get(), 0);
      if (err == -NLE_OBJ_NOTFOUND || err == -NLE_NOADDR || err == -NLE_NOATTR) break;
      if (err < 0) {
        status.Update(NlStatus(absl::StrCat("removing ", what), err));
        break;
      }
    }
  }
  return status;
}

absl::StatusOr<std::vector<RuleInfo>> ListRules(nl_sock* sk) {
  nl_cache* cache = nullptr;
  if (int err = rtnl_rule_alloc_cache(sk, AF_UNSPEC, &cache); err < 0) {
    return NlStatus("listing rules", err);
  }
  std::vector<RuleInfo> out;
  for (nl_object* o = nl_cache_get_first(cache); o != nullptr; o = nl_cache_get_next(o)) {
    auto* r = reinterpret_cast<rtnl_rule*>(o);
    RuleInfo info;
    info.family = rtnl_rule_get_family(r);
    info.priority = rtnl_rule_get_prio(r);
    info.action = rtnl_rule_get_action(r);
    info.table = rtnl_rule_get_table(r);
    uint8_t proto = 0;
    if (rtnl_rule_get_ipproto(r, &proto) == 0) info.ipproto = proto;
    uint16_t start = 0;
    uint16_t end = 0;
    if (rtnl_rule_get_dport(r, &start, &end) == 0) {
      info.dport_start = start;
      info.dport_end = end;
    }
    if (nl_addr* dst = rtnl_rule_get_dst(r);
        dst != nullptr && nl_addr_get_len(dst) <= info.dst.size()) {
      info.dst_length = static_cast<int>(nl_addr_get_prefixlen(dst));
      std::memcpy(info.dst.data(), nl_addr_get_binary_addr(dst), nl_addr_get_len(dst));
    }
    uint16_t sstart = 0;
    uint16_t send = 0;
    info.has_other_selector = rtnl_rule_get_src(r) != nullptr || rtnl_rule_get_iif(r) != nullptr ||
                              rtnl_rule_get_oif(r) != nullptr ||
                              (rtnl_rule_get_mark(r) != 0 && rtnl_rule_get_mark(r) != UINT32_MAX) ||
                              rtnl_rule_get_sport(r, &sstart, &send) == 0;
    out.push_back(info);
  }
  nl_cache_free(cache);
  std::sort(out.begin(), out.end(),
            [](const RuleInfo& a, const RuleInfo& b) { return a.priority < b.priority; });
  return out;
}

std::string RefusingRule(const std::vector<RuleInfo>& rules, int family,
                         const std::array<uint8_t, 16>& address, uint8_t ipproto, uint16_t port) {
  for (const RuleInfo& r : rules) {
    if (r.family != family || r.priority >= kPolicyRulePriority) continue;
    if (r.action != FR_ACT_PROHIBIT || r.has_other_selector) continue;
    if (r.dst_length >= 0) {
      if (!PrefixContains(r.dst, r.dst_length, address)) continue;
      return absl::StrCat("pref ", r.priority, ": to ", FormatPrefix(family, r.dst, r.dst_length),
                          " prohibit");
    }
    if (r.ipproto != 0 && r.ipproto != ipproto) continue;
    if (r.dport_start != 0 && (port < r.dport_start || port > r.dport_end)) continue;
    if (r.ipproto == 0 && r.dport_start == 0) {
      return absl::StrCat("pref ", r.priority, ": prohibit all",
                          r.priority == kFailClosedRulePriority
                              ? " (fail-closed: the last ApplyPolicy failed)"
                          : r.priority == 1 ? " (closed for good: every hold ended)"
                                            : "");
    }
    return absl::StrCat("pref ", r.priority, ": ", ProtoName(r.ipproto), " dport ", r.dport_start,
                        " prohibit");
  }
  return "";
}

}  // namespace lazaret::netrouter
