#include "services/configd/network_narrowing.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/configd/narrowing.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/http_rule.h"

namespace lazaret::config {
namespace {

std::vector<std::string> Values(const std::optional<SettingList<std::string>>& l) {
  std::vector<std::string> out;
  if (l) {
    for (const Setting<std::string>& e : l->value) out.push_back(e.value);
  }
  return out;
}

std::string ListText(const std::vector<std::string>& v) {
  std::vector<std::string> quoted;
  for (const std::string& s : v) quoted.push_back(InQuotes(s));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

// The names the user's own layers grant one profile: the network-wide
// ones and the profile's own.
std::vector<Setting<std::string>> GrantedNames(const LayerConfig& c, const ProfileLayer& cp) {
  std::vector<Setting<std::string>> out;
  if (c.default_allow_domains) out = c.default_allow_domains->value;
  if (cp.allow_domains) {
    out.insert(out.end(), cp.allow_domains->value.begin(), cp.allow_domains->value.end());
  }
  return out;
}

// The HTTP rules of a workspace profile (`wp`) against the user's (`cp`).
// A workspace rule for a host replaces the rule the user's files give that
// host (the same host's, else the most specific wildcard's that covers
// it), so each of its entries must be admitted by an entry of that rule; a
// host the user's files give no rule allows everything, so any rule for it
// narrows.
void CheckHttpNarrowing(const ProfileLayer& wp, const ProfileLayer& cp, const std::string& base,
                        const std::string& hint, Diagnostics& diags) {
  std::vector<vocab::HttpRule> granted;
  for (const auto& [host, r] : cp.http) {
    vocab::HttpRule g{host, {}};
    for (const Setting<vocab::HttpAllow>& a : r.allow) g.allow.push_back(a.value);
    granted.push_back(std::move(g));
  }
  for (const auto& [host, r] : wp.http) {
    const vocab::HttpRule* rule = vocab::DecidingHttpRule(granted, host);
    if (rule == nullptr) continue;
    for (const Setting<vocab::HttpAllow>& a : r.allow) {
      const bool covered = std::any_of(
          rule->allow.begin(), rule->allow.end(),
          [&](const vocab::HttpAllow& g) { return vocab::HttpAllowCovers(g, a.value); });
      if (covered) continue;
      diags.Widening(
          a.origin,
          absl::StrCat("allows ", InQuotes(absl::StrCat(a.value.method, " ", a.value.path_prefix)),
                       " to ", InQuotes(host), ", which no entry of ", base, ".http.",
                       InQuotes(rule->host), " in your configuration admits"),
          hint);
    }
  }
}

// The egress settings a workspace table (`w`) writes against the user's
// grant for the same scope: the ceiling's own value (`c`), else the
// network-wide one (`cn`), else the built-in default.
void CheckEgressSettings(const EgressSettings& w, const EgressSettings& c, const EgressSettings* cn,
                         const std::string& scope, const std::string& hint, Diagnostics& diags) {
  auto granted = [&](auto member) {
    const auto& own = c.*member;
    if (own || cn == nullptr) return own;
    return cn->*member;
  };
  const std::string at = scope.empty() ? "network" : scope;
  if (w.egress) {
    const auto g = granted(&EgressSettings::egress);
    const EgressMode limit = g ? g->value : EgressMode::kAsk;
    if (static_cast<int>(w.egress->value) > static_cast<int>(limit)) {
      diags.Widening(
          w.egress->origin,
          absl::StrCat("sets ", at, ".egress to ", InQuotes(EgressModeName(w.egress->value)),
                       "; your configuration has ", InQuotes(EgressModeName(limit)),
                       " (a workspace may only move it toward \"names\": names < "
                       "ask < open)"),
          hint);
    }
  }
  if (w.ask_timeout) {
    const auto g = granted(&EgressSettings::ask_timeout);
    const uint32_t limit = g ? g->value : kDefaultAskTimeoutSeconds;
    if (w.ask_timeout->value > limit) {
      diags.Widening(w.ask_timeout->origin,
                     absl::StrCat("raises ", at, ".ask_timeout to ", w.ask_timeout->value,
                                  " seconds; your configuration has ", limit,
                                  " (a workspace may only lower it)"),
                     hint);
    }
  }
  if (w.ask_unattended_wait && w.ask_unattended_wait->value) {
    const auto g = granted(&EgressSettings::ask_unattended_wait);
    if (!(g && g->value)) {
      diags.Widening(w.ask_unattended_wait->origin,
                     absl::StrCat("sets ", at,
                                  ".ask_unattended to \"wait\"; your configuration refuses "
                                  "unlisted names at once when no approver is attached (a "
                                  "workspace may only set \"deny\")"),
                     hint);
    }
  }
  if (w.trust_host_ca && w.trust_host_ca->value) {
    const auto g = granted(&EgressSettings::trust_host_ca);
    if (!(g && g->value)) {
      diags.Widening(w.trust_host_ca->origin,
                     absl::StrCat("sets ", at,
                                  ".trust_host_ca, which would make the sandbox trust the CAs "
                                  "your host adds; your configuration does not (a workspace "
                                  "may only set it to false)"),
                     hint);
    }
  }
}

}  // namespace

bool NameCoveredBy(const std::string& name, const std::vector<Setting<std::string>>& granted) {
  return std::any_of(granted.begin(), granted.end(), [&](const Setting<std::string>& g) {
    return vocab::DomainCovers(g.value, name);
  });
}

void CheckNetworkNarrowing(const LayerConfig& w, const LayerConfig& c, const std::string& hint,
                           Diagnostics& diags) {
  // Allow and deny lists are handed to the network policy, which decides
  // by longest prefix (a more specific allow beats a broader deny). So a
  // workspace keeps every deny entry exactly, and an allow entry must be
  // one the user granted, or lie inside one and overlap no deny entry.
  const std::vector<Setting<vocab::Cidr>>& deny =
      w.default_deny ? w.default_deny->value : c.default_deny->value;
  auto allow_is_narrower = [&](const vocab::Cidr& n,
                               const std::vector<Setting<vocab::Cidr>>& granted) {
    const bool exact = std::any_of(granted.begin(), granted.end(),
                                   [&](const Setting<vocab::Cidr>& g) { return g.value == n; });
    if (exact) return true;
    const bool overlaps_deny =
        std::any_of(deny.begin(), deny.end(),
                    [&](const Setting<vocab::Cidr>& d) { return d.value.Overlaps(n); });
    return CoveredBy(n, granted) && !overlaps_deny;
  };
  if (w.default_allow && c.default_allow) {
    for (const Setting<vocab::Cidr>& n : w.default_allow->value) {
      if (!allow_is_narrower(n.value, c.default_allow->value)) {
        diags.Widening(n.origin,
                       absl::StrCat("allows ", InQuotes(n.value.ToString()),
                                    ", which is neither an entry of network.default_allow in "
                                    "your configuration nor a part of one that avoids every "
                                    "denied range"),
                       hint);
      }
    }
  }
  if (w.default_deny && c.default_deny) {
    for (const Setting<vocab::Cidr>& n : c.default_deny->value) {
      const bool kept =
          std::any_of(w.default_deny->value.begin(), w.default_deny->value.end(),
                      [&](const Setting<vocab::Cidr>& d) { return d.value == n.value; });
      if (!kept) {
        diags.Widening(w.default_deny->origin,
                       absl::StrCat("drops ", InQuotes(n.value.ToString()),
                                    " from network.default_deny (denied by ",
                                    LayerName(n.origin.layer), " ", n.origin.file,
                                    "); a workspace file may add deny entries, not remove or "
                                    "replace them"),
                       hint);
      }
    }
  }
  // A name opens the addresses it resolves to, so each one must be covered
  // by a name the user granted every profile it reaches.
  if (w.default_allow_domains) {
    for (const Setting<std::string>& d : w.default_allow_domains->value) {
      if (c.default_allow_domains && NameCoveredBy(d.value, c.default_allow_domains->value)) {
        continue;
      }
      std::vector<std::string> missing;
      for (const auto& [name, cp] : c.profiles) {
        if (!NameCoveredBy(d.value, GrantedNames(c, cp))) missing.push_back(name);
      }
      if (missing.empty()) continue;
      diags.Widening(d.origin,
                     absl::StrCat("allows the name ", InQuotes(d.value),
                                  ", which no name of network.default_allow_domains in your "
                                  "configuration covers, nor the allow_domains of profile ",
                                  absl::StrJoin(missing, ", ")),
                     hint);
    }
  }
  if (w.dns_upstream) {
    const std::vector<std::string> mine = Values(c.dns_upstream);
    const std::vector<std::string> theirs = Values(w.dns_upstream);
    if (mine != theirs) {
      diags.Widening(w.dns_upstream->origin,
                     absl::StrCat("sets the resolvers asked for the sandbox's names to ",
                                  ListText(theirs), "; your configuration uses ",
                                  mine.empty() ? std::string("the host's own (/etc/resolv.conf)")
                                               : ListText(mine),
                                  ", and whoever answers decides which addresses a name opens"),
                     hint);
    }
  }
  CheckEgressSettings(w.net, c.net, nullptr, "", hint, diags);
  for (const auto& [name, wp] : w.profiles) {
    auto it = c.profiles.find(name);
    if (it == c.profiles.end()) continue;
    const ProfileLayer& cp = it->second;
    const std::string base = absl::StrCat("profiles.", name);
    CheckEgressSettings(wp.net, cp.net, &c.net, base, hint, diags);
    if (wp.default_allow) {
      const bool own = cp.default_allow.has_value();
      const std::vector<Setting<vocab::Cidr>>& granted =
          own ? cp.default_allow->value : c.default_allow->value;
      for (const Setting<vocab::Cidr>& n : wp.default_allow->value) {
        if (!allow_is_narrower(n.value, granted)) {
          diags.Widening(n.origin,
                         absl::StrCat("allows ", InQuotes(n.value.ToString()),
                                      ", which is neither an entry of ",
                                      own ? base + ".default_allow" : "network.default_allow",
                                      " (this profile's default_allow) in your configuration nor "
                                      "a part of one that avoids every denied range"),
                         hint);
        }
      }
    }
    if (wp.allow_egress) {
      for (const Setting<vocab::Cidr>& n : wp.allow_egress->value) {
        if (!cp.allow_egress || !allow_is_narrower(n.value, cp.allow_egress->value)) {
          diags.Widening(n.origin,
                         absl::StrCat("allows egress to ", InQuotes(n.value.ToString()),
                                      ", which is neither an entry of ", base,
                                      ".allow_egress in your configuration nor a part of one "
                                      "that avoids every denied range"),
                         hint);
        }
      }
    }
    if (wp.allow_domains) {
      const std::vector<Setting<std::string>> granted = GrantedNames(c, cp);
      for (const Setting<std::string>& d : wp.allow_domains->value) {
        if (!NameCoveredBy(d.value, granted)) {
          diags.Widening(
              d.origin,
              absl::StrCat("allows the name ", InQuotes(d.value), ", which no name of ", base,
                           ".allow_domains or network.default_allow_domains in your "
                           "configuration covers"),
              hint);
        }
      }
    }
    if (!wp.http.empty()) CheckHttpNarrowing(wp, cp, base, hint, diags);
  }
}

}  // namespace lazaret::config
