// The `ip rule`s of the sidecar's namespace that the router owns. Runs in
// lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only); installs only
// the fixed rules below, for IPv4 and IPv6 alike, and reads the kernel's
// rule list back for LookupRoute's explanations.
//
//   pref 0     local table (the kernel's; loopback and own addresses)
//   pref 1     prohibit all: the final close (namespace_guard.h)
//   pref 2     prohibit all: fail-closed after an ApplyPolicy error
//   pref 90    ipproto udp dport 53, tcp dport 53, tcp dport 853: prohibit
//   pref 95    IPv6 to fe80::/10: prohibit (an IPv6 lookup for a
//              link-local address with a zone only takes routes on that
//              interface, so the table's prohibit route never matches it;
//              a rule does). Multicast and broadcast are not governed by
//              rules or routes at all: the kernel sends them out of a named
//              interface without a lookup (and IPv6 multicast takes the
//              local table's ff00::/8 route at pref 0). The multicast guard
//              (multicast_guard.h) drops multicast at tap0's qdisc;
//              slirp4netns refuses both broadcasts (docs/networking.md).
//              (no resolver but the router's loopback listener)
//   pref 100   lookup 100 (the policy table)
//   pref 32766 main, 32767 default
//
// No rule has a mark, uid or interface selector, so SO_MARK, another uid
// or SO_BINDTODEVICE select no other rule.
#ifndef LAZARET_SIDECAR_POLICY_RULES_H_
#define LAZARET_SIDECAR_POLICY_RULES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sidecar/rtnl_socket.h"

namespace lazaret::netrouter {

inline constexpr uint32_t kFailClosedRulePriority = 2;
inline constexpr uint32_t kDnsRulePriority = 90;
inline constexpr uint32_t kScopedRulePriority = 95;
inline constexpr uint32_t kPolicyRulePriority = 100;

// The DNS ports refused by the pref-90 rules: {ipproto, port}.
struct DnsPortRule {
  uint8_t ipproto;
  uint16_t port;
};
inline constexpr DnsPortRule kDnsPortRules[] = {{17, 53}, {6, 53}, {6, 853}};

// The IPv6 destinations refused by the pref-95 rules, whatever the policy.
inline constexpr const char* kScopedIpv6Prefixes[] = {"fe80::/10"};

// Installs the pref-90, pref-95 and pref-100 rules for both families; a rule that is
// already there stays as it is (one copy).
absl::Status InstallPolicyRules(nl_sock* sk);

// Adds (closed = true) or removes the pref-2 prohibit-all rules of both
// families. Adding twice keeps one copy; removing what is absent is fine.
absl::Status SetFailClosed(nl_sock* sk, bool closed);

struct RuleInfo {
  int family = 0;
  uint32_t priority = 0;
  uint8_t action = 0;  // FR_ACT_*
  uint32_t table = 0;
  uint8_t ipproto = 0;
  uint16_t dport_start = 0;
  uint16_t dport_end = 0;
  // The `to` selector, when the rule has one (pref 95).
  int dst_length = -1;
  std::array<uint8_t, 16> dst{};
  bool has_other_selector = false;  // anything the router never sets
};
absl::StatusOr<std::vector<RuleInfo>> ListRules(nl_sock* sk);

// The rule that refuses a lookup before the policy table, if any: the
// first prohibit rule ahead of pref 100 that matches (family, address,
// ipproto, port). Returns a description ("pref 90: tcp dport 853
// prohibit") or "".
std::string RefusingRule(const std::vector<RuleInfo>& rules, int family,
                         const std::array<uint8_t, 16>& address, uint8_t ipproto, uint16_t port);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_POLICY_RULES_H_
