// The policy compiler: a session's resolved network settings, the host's
// and the namespace's addresses, live changes and name routes in; the
// ordered rule list with each rule's source and the route table for
// NetRouterService.ApplyPolicy out. Pure (no I/O, no clock). Runs in
// lazaret-netpolicyd, unprivileged; the configuration has been checked by
// lazaret-configd, but every prefix and pattern is parsed again and a bad
// one fails the compile (the session stays closed).
//
// Semantics (docs/networking.md):
//   - longest prefix wins; at equal prefix deny wins, except that an allow
//     of exactly the prefix of an always-denied entry (a host interface
//     address, a gateway or link service, link-local and metadata
//     addresses, the family default) opens it;
//   - every IPv4 rule also judges its IPv4-mapped, NAT64 and 6to4 forms;
//   - name routes (an allowed name's addresses) are admitted only where no
//     explicit or always deny decides the address, and while the name is
//     still answered;
//   - the host's own addresses and on-link networks are denied like the
//     always-denied entries: only an allow of exactly that prefix (or of a
//     narrower one inside it) opens them, never a broader one such as /0;
//   - every name is answered only when the whole space of a family is
//     allowed and the egress mode is "open".
#ifndef LAZARET_SERVICES_NETPOLICYD_COMPILE_H_
#define LAZARET_SERVICES_NETPOLICYD_COMPILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lazaret/config/v1/config.pb.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "lazaret/netrouter/v1/netrouter.pb.h"
#include "services/netpolicyd/host_networks.h"
#include "services/netpolicyd/ip_prefix.h"
#include "services/netpolicyd/route_digest.h"

namespace lazaret::netpolicyd {

// An address an allowed name resolved to, allowed until `expires_unix`.
struct NameRoute {
  IpPrefix address;
  std::string name;  // the name asked, lowercase
  int64_t expires_unix = 0;
  // Allowed by an approver (`egress = "ask"`, "once"): kept although no
  // pattern answers the name; a deny pattern still drops it.
  bool approved = false;
};

struct CompileInput {
  lazaret::config::v1::NetworkPolicy network;
  // The host's addresses and the networks it is directly connected to
  // (host_monitor.h), denied unless an allow names exactly one of them.
  HostNetworks host;
  // No snapshot of the host: every allow is left out (fail closed) and no
  // name is answered, until one arrives.
  bool host_unknown = false;
  lazaret::netrouter::v1::GetNamespaceInfoResponse namespace_info;
  // `lazaret net allow|deny` of a CIDR: destination, action and
  // source.expires_unix (0: no expiry) are used; the kind becomes LIVE.
  std::vector<lazaret::netpolicy::v1::Rule> live_rules;
  // `lazaret net allow|deny` of a name pattern.
  std::vector<lazaret::netpolicy::v1::NameRule> live_names;
  std::vector<NameRoute> name_routes;
  // Rules and routes that expire at or before this moment are left out.
  int64_t now_unix = 0;
};

// How the name policy answers a query name.
struct NameVerdict {
  bool answered = false;
  // The deciding pattern; action UNSPECIFIED when no pattern matched.
  lazaret::netpolicy::v1::NameRule rule;
};

// The compiled policy of one session at one moment.
class CompiledPolicy {
 public:
  // Every rule, effective or shadowed: longest prefix first, at equal
  // prefix the winner first.
  const std::vector<lazaret::netpolicy::v1::Rule>& rules() const { return rules_; }
  // One route per prefix, sorted (family, address, length).
  const std::vector<lazaret::netrouter::v1::Route>& routes() const { return routes_; }
  // Name patterns: live ones first, then the configuration's.
  const std::vector<lazaret::netpolicy::v1::NameRule>& names() const { return names_; }
  // The name routes that made it into the table.
  const std::vector<NameRoute>& name_routes() const { return name_routes_; }
  // The whole space of a family is allowed and the egress mode is open:
  // every name is answered.
  bool names_unrestricted() const { return names_unrestricted_; }
  // Compiled without a snapshot of the host: everything is closed.
  bool host_unknown() const { return host_unknown_; }
  // The router's digest of routes() (RoutesDigest).
  const std::string& digest() const { return digest_; }
  // The earliest expiry among the live rules and name routes in force; 0
  // when nothing expires.
  int64_t next_expiry_unix() const { return next_expiry_unix_; }

  // The rule that decides `address` (a host prefix): the winner at the
  // longest prefix that contains it. Never fails: the defaults contain
  // everything.
  const lazaret::netpolicy::v1::Rule& Evaluate(const IpPrefix& address) const;
  // Whether an answered name may have a route to `address`: the deciding
  // rule among the rules that do not come from names is an allow or the
  // family default. `deciding` is set to that rule.
  bool AdmitsNameAddress(const IpPrefix& address,
                         const lazaret::netpolicy::v1::Rule** deciding) const;
  // `name` is the query name as PlainName returns it (empty: not plain,
  // never answered).
  NameVerdict MatchName(absl::string_view name) const;

 private:
  friend absl::StatusOr<CompiledPolicy> Compile(const CompileInput& input);
  struct Winner {
    size_t rule;        // index into rules_
    bool default_like;  // the family default or a form derived from it
  };
  using WinnerMap = std::map<IpPrefix, Winner>;
  static const Winner* Lookup(const WinnerMap& map, const std::vector<int>& lengths,
                              const IpPrefix& address);

  std::vector<lazaret::netpolicy::v1::Rule> rules_;
  std::vector<lazaret::netrouter::v1::Route> routes_;
  std::vector<lazaret::netpolicy::v1::NameRule> names_;
  std::vector<NameRoute> name_routes_;
  bool names_unrestricted_ = false;
  bool host_unknown_ = false;
  lazaret::netpolicy::v1::NameRule unrestricted_rule_;
  std::string digest_;
  int64_t next_expiry_unix_ = 0;
  WinnerMap all_;                       // every prefix
  WinnerMap static_;                    // prefixes of rules that do not come from names
  std::vector<int> all_lengths_[2];     // prefix lengths present, longest first
  std::vector<int> static_lengths_[2];  // per family
};

absl::StatusOr<CompiledPolicy> Compile(const CompileInput& input);

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_COMPILE_H_
