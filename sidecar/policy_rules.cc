#include "sidecar/policy_rules.h"

#include <linux/fib_rules.h>
#include <sys/socket.h>
// Spelled with libnl3/ so the header is found where Debian installs it.
#include <libnl3/netlink/route/rule.h>

#include <algorithm>
#include <cstdint>
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
    uint16_t sstart = 0;
    uint16_t send = 0;
    info.has_other_selector = rtnl_rule_get_src(r) != nullptr || rtnl_rule_get_dst(r) != nullptr ||
                              rtnl_rule_get_iif(r) != nullptr || rtnl_rule_get_oif(r) != nullptr ||
                              (rtnl_rule_get_mark(r) != 0 && rtnl_rule_get_mark(r) != UINT32_MAX) ||
                              rtnl_rule_get_sport(r, &sstart, &send) == 0;
    out.push_back(info);
  }
  nl_cache_free(cache);
  std::sort(out.begin(), out.end(),
            [](const RuleInfo& a, const RuleInfo& b) { return a.priority < b.priority; });
  return out;
}

std::string RefusingRule(const std::vector<RuleInfo>& rules, int family, uint8_t ipproto,
                         uint16_t port) {
  for (const RuleInfo& r : rules) {
    if (r.family != family || r.priority >= kPolicyRulePriority) continue;
    if (r.action != FR_ACT_PROHIBIT || r.has_other_selector) continue;
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
