#include "services/netpolicyd/compile.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/fs/sha256.h"
#include "services/common/status_util.h"
#include "services/netpolicyd/route_digest.h"
#include "services/vocab/domain_pattern.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rt = ::lazaret::netrouter::v1;

// Precedence at one prefix, best first. A hard deny (configuration, live)
// beats everything; an allow beats a soft deny (the always-denied entries
// and the defaults, which only an allow of exactly their prefix opens); a
// name route never beats anything at its own prefix.
enum class Class { kHardDeny = 0, kAllow = 1, kSoftDeny = 2, kName = 3 };

// The metadata addresses no sandbox reaches unless an allow names exactly
// that host.
constexpr const char* kMetadataAddresses[] = {
    "169.254.169.254/32",
    "100.100.100.200/32",
    "fd00:ec2::254/128",
};
// IPv4 link-local: inside it only an exact host allow opens an address; an
// allow of the range or of a part of it wider than one host opens nothing.
constexpr char kIpv4LinkLocal[] = "169.254.0.0/16";
// IPv6 link-local: refused by the router's pref-95 rule ahead of the
// table (a scoped lookup never reaches the table's routes), so no allow
// can open it and none is pretended to.
constexpr const char* kScopedIpv6[] = {"fe80::/10"};

struct Candidate {
  IpPrefix prefix;
  pb::Rule rule;
  Class cls;
  bool default_like;
};

bool Before(const Candidate& a, const Candidate& b) {
  // Family, longest prefix first, address, then precedence.
  return std::make_tuple(a.prefix.family(), -a.prefix.length(), a.prefix.bytes(), a.cls) <
         std::make_tuple(b.prefix.family(), -b.prefix.length(), b.prefix.bytes(), b.cls);
}

class Collector {
 public:
  // Adds the rule and, for IPv4, its three embedded forms.
  void Add(const IpPrefix& prefix, pb::RuleAction action, const pb::RuleSource& source, Class cls,
           bool default_like) {
    Push(prefix, action, source, cls, default_like);
    if (!prefix.is_ipv4()) return;
    const std::pair<IpPrefix, const char*> forms[] = {
        {prefix.Ipv4Mapped(), "IPv4-mapped"},
        {prefix.Nat64(), "NAT64"},
        {prefix.SixToFour(), "6to4"},
    };
    for (const auto& [form, what] : forms) {
      pb::RuleSource derived = source;
      derived.set_kind(pb::RULE_KIND_DERIVED);
      derived.set_detail(absl::StrCat(what, " form of ", prefix.ToString(),
                                      source.detail().empty() ? "" : " (", source.detail(),
                                      source.detail().empty() ? "" : ")"));
      Push(form, action, derived, cls, default_like);
    }
  }
  void Push(const IpPrefix& prefix, pb::RuleAction action, const pb::RuleSource& source, Class cls,
            bool default_like) {
    Candidate c{prefix, {}, cls, default_like};
    c.rule.mutable_destination()->set_prefix(prefix.ToString());
    c.rule.set_action(action);
    *c.rule.mutable_source() = source;
    candidates_.push_back(std::move(c));
  }
  std::vector<Candidate>& candidates() { return candidates_; }

 private:
  std::vector<Candidate> candidates_;
};

pb::RuleSource SourceOf(pb::RuleKind kind, std::string detail) {
  pb::RuleSource s;
  s.set_kind(kind);
  s.set_detail(std::move(detail));
  return s;
}

pb::RuleSource SourceOf(const lazaret::config::v1::EntrySource& entry) {
  pb::RuleSource s;
  s.set_kind(pb::RULE_KIND_CONFIG);
  s.set_layer(entry.layer());
  s.set_file(entry.file());
  s.set_line(entry.line());
  s.set_key_path(entry.key_path());
  return s;
}

absl::StatusOr<IpPrefix> ParseHostAddress(const std::string& text) {
  // A zone ("fe80::2%tap0") names the link, not the address.
  return IpPrefix::ParseAddress(text.substr(0, text.find('%')));
}

// An allow that lies inside IPv4 link-local without being one host, or
// inside IPv6 link-local at all, opens nothing: a deny at the
// very same prefix outranks it (deny wins at equal prefix) and says why.
void PinAlwaysDenied(const IpPrefix& allow, Collector& out) {
  if (allow.is_ipv4()) {
    if (allow.is_host() || !IpPrefix::Parse(kIpv4LinkLocal)->Contains(allow)) return;
    out.Add(allow, pb::RULE_ACTION_DENY,
            SourceOf(pb::RULE_KIND_ALWAYS, absl::StrCat("link-local: only an exact host allow "
                                                        "opens an address of ",
                                                        kIpv4LinkLocal)),
            Class::kHardDeny, false);
    return;
  }
  for (const char* text : kScopedIpv6) {
    if (!IpPrefix::Parse(text)->Contains(allow)) continue;
    out.Add(allow, pb::RULE_ACTION_DENY,
            SourceOf(pb::RULE_KIND_ALWAYS,
                     absl::StrCat("inside ", text, ": refused by the router's pref-95 rule")),
            Class::kHardDeny, false);
  }
}

// Adds every rule that does not come from a name. Fails on any bad entry.
absl::Status CollectStatic(const CompileInput& in, Collector& out, int64_t* next_expiry) {
  for (const auto& rule : in.live_rules) {
    int64_t expires = rule.source().expires_unix();
    if (expires != 0 && expires <= in.now_unix) continue;
    LAZ_ASSIGN_OR_RETURN(IpPrefix prefix, IpPrefix::Parse(rule.destination().prefix()));
    if (rule.action() != pb::RULE_ACTION_ALLOW && rule.action() != pb::RULE_ACTION_DENY) {
      return absl::InvalidArgumentError(
          absl::StrCat("live rule ", prefix.ToString(), ": no action"));
    }
    if (expires != 0 && (*next_expiry == 0 || expires < *next_expiry)) *next_expiry = expires;
    pb::RuleSource source = rule.source();
    source.set_kind(pb::RULE_KIND_LIVE);
    bool deny = rule.action() == pb::RULE_ACTION_DENY;
    if (!deny && in.host_unknown) continue;
    out.Add(prefix, rule.action(), source, deny ? Class::kHardDeny : Class::kAllow, false);
    if (!deny) PinAlwaysDenied(prefix, out);
  }
  for (const auto& entry : in.network.deny()) {
    LAZ_ASSIGN_OR_RETURN(IpPrefix prefix, IpPrefix::Parse(entry.cidr().prefix()));
    out.Add(prefix, pb::RULE_ACTION_DENY, SourceOf(entry.source()), Class::kHardDeny, false);
  }
  for (const auto& entry : in.network.allow()) {
    LAZ_ASSIGN_OR_RETURN(IpPrefix prefix, IpPrefix::Parse(entry.cidr().prefix()));
    if (in.host_unknown) continue;
    out.Add(prefix, pb::RULE_ACTION_ALLOW, SourceOf(entry.source()), Class::kAllow, false);
    PinAlwaysDenied(prefix, out);
  }
  for (const auto& host : in.host.addresses) {
    if (!host.address.is_host()) {
      return absl::InvalidArgumentError(
          absl::StrCat("host address ", host.address.ToString(), " is not a host prefix"));
    }
    out.Add(host.address, pb::RULE_ACTION_DENY,
            SourceOf(pb::RULE_KIND_HOST_ADDRESS, absl::StrCat("host interface ", host.interface)),
            Class::kSoftDeny, false);
  }
  // A LAN, a VPN's network, a container bridge: whatever the host sits on
  // is as private as the host itself, whatever its addresses look like (an
  // IPv6 LAN uses global prefixes). Soft: an allow of exactly the network
  // opens it; longest prefix wins, so a /0 never does.
  for (const auto& net : in.host.on_link) {
    out.Add(net.prefix, pb::RULE_ACTION_DENY,
            SourceOf(pb::RULE_KIND_HOST_NETWORK,
                     absl::StrCat("on-link on ", net.interface.empty() ? "?" : net.interface,
                                  " (table ", RouteTableName(net.table), ")")),
            Class::kSoftDeny, false);
  }
  for (const auto& gateway : in.namespace_info.gateways()) {
    LAZ_ASSIGN_OR_RETURN(IpPrefix address, ParseHostAddress(gateway));
    out.Add(address, pb::RULE_ACTION_DENY, SourceOf(pb::RULE_KIND_GATEWAY, "gateway"),
            Class::kSoftDeny, false);
  }
  for (const auto& service : in.namespace_info.link_services()) {
    LAZ_ASSIGN_OR_RETURN(IpPrefix address, ParseHostAddress(service));
    out.Add(address, pb::RULE_ACTION_DENY, SourceOf(pb::RULE_KIND_GATEWAY, "link service"),
            Class::kSoftDeny, false);
  }
  for (const char* text : kMetadataAddresses) {
    out.Add(*IpPrefix::Parse(text), pb::RULE_ACTION_DENY,
            SourceOf(pb::RULE_KIND_ALWAYS, "metadata address"), Class::kSoftDeny, false);
  }
  out.Add(*IpPrefix::Parse(kIpv4LinkLocal), pb::RULE_ACTION_DENY,
          SourceOf(pb::RULE_KIND_ALWAYS, "link-local"), Class::kHardDeny, false);
  for (const char* text : kScopedIpv6) {
    out.Add(*IpPrefix::Parse(text), pb::RULE_ACTION_DENY,
            SourceOf(pb::RULE_KIND_ALWAYS, "IPv6 link-local (router rule pref 95)"),
            Class::kHardDeny, false);
  }
  for (auto family : {IpPrefix::Family::kIpv4, IpPrefix::Family::kIpv6}) {
    out.Add(IpPrefix::Default(family), pb::RULE_ACTION_DENY,
            SourceOf(pb::RULE_KIND_DEFAULT, "denied unless the whole space is allowed"),
            Class::kSoftDeny, true);
  }
  return absl::OkStatus();
}

}  // namespace

const CompiledPolicy::Winner* CompiledPolicy::Lookup(const WinnerMap& map,
                                                     const std::vector<int>& lengths,
                                                     const IpPrefix& address) {
  for (int length : lengths) {
    if (length > address.length()) continue;
    auto it = map.find(address.Truncated(length));
    if (it != map.end()) return &it->second;
  }
  return nullptr;
}

const pb::Rule& CompiledPolicy::Evaluate(const IpPrefix& address) const {
  // The defaults are always present, so a winner exists.
  return rules_[Lookup(all_, all_lengths_[static_cast<int>(address.family())], address)->rule];
}

bool CompiledPolicy::AdmitsNameAddress(const IpPrefix& address, const pb::Rule** deciding) const {
  const Winner* w = Lookup(static_, static_lengths_[static_cast<int>(address.family())], address);
  *deciding = &rules_[w->rule];
  return (*deciding)->action() == pb::RULE_ACTION_ALLOW || w->default_like;
}

NameVerdict CompiledPolicy::MatchName(absl::string_view name) const {
  NameVerdict verdict;
  if (name.empty()) return verdict;
  // A matching deny refuses, whatever else matches.
  for (const auto& rule : names_) {
    if (rule.action() == pb::RULE_ACTION_DENY && vocab::DomainCovers(rule.pattern(), name)) {
      verdict.rule = rule;
      return verdict;
    }
  }
  for (const auto& rule : names_) {
    if (rule.action() == pb::RULE_ACTION_ALLOW && vocab::DomainCovers(rule.pattern(), name)) {
      verdict.answered = true;
      verdict.rule = rule;
      return verdict;
    }
  }
  if (names_unrestricted_) {
    verdict.answered = true;
    verdict.rule = unrestricted_rule_;
  }
  return verdict;
}

absl::StatusOr<CompiledPolicy> Compile(const CompileInput& in) {
  CompiledPolicy policy;
  policy.host_unknown_ = in.host_unknown;
  Collector collector;
  LAZ_RETURN_IF_ERROR(CollectStatic(in, collector, &policy.next_expiry_unix_));

  for (const auto& rule : in.live_names) {
    int64_t expires = rule.source().expires_unix();
    if (expires != 0 && expires <= in.now_unix) continue;
    if (rule.action() != pb::RULE_ACTION_ALLOW && rule.action() != pb::RULE_ACTION_DENY) {
      return absl::InvalidArgumentError(absl::StrCat("live name ", rule.pattern(), ": no action"));
    }
    pb::NameRule normalized = rule;
    LAZ_ASSIGN_OR_RETURN(*normalized.mutable_pattern(), vocab::NormalizeDnsPattern(rule.pattern()));
    normalized.mutable_source()->set_kind(pb::RULE_KIND_LIVE);
    if (expires != 0 && (policy.next_expiry_unix_ == 0 || expires < policy.next_expiry_unix_)) {
      policy.next_expiry_unix_ = expires;
    }
    policy.names_.push_back(std::move(normalized));
  }
  if (in.host_unknown) policy.names_.clear();
  for (const auto& entry : in.network.allow_domains()) {
    if (in.host_unknown) break;
    pb::NameRule rule;
    LAZ_ASSIGN_OR_RETURN(*rule.mutable_pattern(), vocab::NormalizeDnsPattern(entry.pattern()));
    rule.set_action(pb::RULE_ACTION_ALLOW);
    *rule.mutable_source() = SourceOf(entry.source());
    policy.names_.push_back(std::move(rule));
  }

  // Decide the static table first: the name routes are judged against it.
  auto build = [&policy](std::vector<Candidate>& candidates) {
    std::stable_sort(candidates.begin(), candidates.end(), Before);
    policy.rules_.clear();
    policy.all_.clear();
    policy.static_.clear();
    for (auto& lengths : policy.all_lengths_) lengths.clear();
    for (auto& lengths : policy.static_lengths_) lengths.clear();
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      policy.rules_.push_back(c.rule);
      int family = static_cast<int>(c.prefix.family());
      CompiledPolicy::Winner winner{i, c.default_like};
      if (policy.all_.emplace(c.prefix, winner).second) {
        policy.all_lengths_[family].push_back(c.prefix.length());
      }
      if (c.cls != Class::kName && policy.static_.emplace(c.prefix, winner).second) {
        policy.static_lengths_[family].push_back(c.prefix.length());
      }
    }
    for (auto* set : {policy.all_lengths_, policy.static_lengths_}) {
      for (int f = 0; f < 2; ++f) {
        set[f].erase(std::unique(set[f].begin(), set[f].end()), set[f].end());
      }
    }
  };
  std::vector<Candidate>& candidates = collector.candidates();
  build(candidates);

  // Unspecified counts as open: a configuration written before the egress
  // modes existed keeps its meaning.
  const lazaret::config::v1::EgressMode egress = in.network.egress();
  const bool open_egress = egress == lazaret::config::v1::EGRESS_MODE_OPEN ||
                           egress == lazaret::config::v1::EGRESS_MODE_UNSPECIFIED;
  for (auto family : {IpPrefix::Family::kIpv4, IpPrefix::Family::kIpv6}) {
    const pb::Rule& top = policy.rules_[policy.static_.at(IpPrefix::Default(family)).rule];
    if (open_egress && top.action() == pb::RULE_ACTION_ALLOW && !policy.names_unrestricted_) {
      policy.names_unrestricted_ = true;
      policy.unrestricted_rule_.set_pattern("*");
      policy.unrestricted_rule_.set_action(pb::RULE_ACTION_ALLOW);
      *policy.unrestricted_rule_.mutable_source() = top.source();
      policy.unrestricted_rule_.mutable_source()->set_detail(
          absl::StrCat("every name: ", top.destination().prefix(), " is allowed"));
    }
  }

  bool any_name = false;
  for (const auto& route : in.name_routes) {
    if (route.expires_unix <= in.now_unix || !route.address.is_host()) continue;
    const pb::Rule* deciding = nullptr;
    if (!policy.AdmitsNameAddress(route.address, &deciding)) continue;
    const NameVerdict verdict = policy.MatchName(route.name);
    if (!verdict.answered && !(route.approved && verdict.rule.pattern().empty())) continue;
    pb::RuleSource source = SourceOf(pb::RULE_KIND_NAME, route.name);
    source.set_expires_unix(route.expires_unix);
    collector.Push(route.address, pb::RULE_ACTION_ALLOW, source, Class::kName, false);
    policy.name_routes_.push_back(route);
    if (policy.next_expiry_unix_ == 0 || route.expires_unix < policy.next_expiry_unix_) {
      policy.next_expiry_unix_ = route.expires_unix;
    }
    any_name = true;
  }
  if (any_name) build(candidates);

  for (const auto& [prefix, winner] : policy.all_) {
    rt::Route route;
    route.mutable_destination()->set_prefix(prefix.ToString());
    route.set_action(policy.rules_[winner.rule].action() == pb::RULE_ACTION_ALLOW
                         ? rt::ROUTE_ACTION_ALLOW
                         : rt::ROUTE_ACTION_PROHIBIT);
    policy.routes_.push_back(std::move(route));
  }
  LAZ_ASSIGN_OR_RETURN(policy.digest_, RoutesDigest(policy.routes_));
  return policy;
}

}  // namespace lazaret::netpolicyd
