#include "sidecar/policy_table.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "services/common/fs/sha256.h"
#include "services/vocab/cidr.h"

namespace lazaret::netrouter {
namespace {

absl::Status RouteError(int index, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat("route ", index, ": ", s.message()));
}

absl::Status CheckSorted(const std::vector<std::pair<PolicyRoute, int>>& sorted) {
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i - 1].first.prefix == sorted[i].first.prefix) {
      return absl::InvalidArgumentError(absl::StrCat(
          "routes ", sorted[i - 1].second, " and ", sorted[i].second, " both have destination ",
          sorted[i].first.prefix.ToString(), " (at most one route per destination)"));
    }
  }
  bool v4_default = false;
  bool v6_default = false;
  for (const auto& [route, index] : sorted) {
    if (route.prefix.length != 0) continue;
    (route.prefix.family == AF_INET ? v4_default : v6_default) = true;
  }
  if (!v4_default || !v6_default) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the policy has no ", !v4_default ? "IPv4 default (0.0.0.0/0)" : "IPv6 default (::/0)",
        "; both families need an explicit default route (prohibit unless the whole space is "
        "allowed)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PolicySet> SortAndCheck(std::vector<std::pair<PolicyRoute, int>> indexed) {
  std::sort(indexed.begin(), indexed.end(),
            [](const auto& a, const auto& b) { return a.first.prefix < b.first.prefix; });
  if (absl::Status s = CheckSorted(indexed); !s.ok()) return s;
  PolicySet out;
  out.reserve(indexed.size());
  for (auto& [route, index] : indexed) out.push_back(route);
  return out;
}

}  // namespace

std::string Prefix::ToString() const {
  if (family == AF_INET) {
    // What inet_ntop prints, without its printf (digests format every route).
    return absl::StrCat(bytes[0], ".", bytes[1], ".", bytes[2], ".", bytes[3], "/", length);
  }
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes.data(), buf, sizeof(buf));
  return absl::StrCat(buf, "/", length);
}

bool Prefix::Contains(int addr_family, const uint8_t* address) const {
  if (addr_family != family) return false;
  const int full = length / 8;
  if (std::memcmp(bytes.data(), address, full) != 0) return false;
  const int rest = length % 8;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (address[full] & mask) == bytes[full];
}

absl::StatusOr<Prefix> ParsePrefix(absl::string_view text) {
  absl::StatusOr<vocab::Cidr> cidr = vocab::Cidr::Parse(text);
  if (!cidr.ok()) return cidr.status();
  const std::string canonical = cidr->ToString();
  if (canonical != text) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not in canonical form; write \"", canonical, "\""));
  }
  Prefix p;
  p.family = cidr->family() == vocab::Cidr::Family::kIpv4 ? AF_INET : AF_INET6;
  p.length = cidr->prefix_length();
  const std::string address = canonical.substr(0, canonical.find('/'));
  if (inet_pton(p.family, address.c_str(), p.bytes.data()) != 1) {
    return absl::InternalError(absl::StrCat("cannot convert \"", address, "\""));
  }
  return p;
}

const char* ActionName(Action a) { return a == Action::kAllow ? "allow" : "prohibit"; }

absl::StatusOr<PolicySet> ValidateRoutes(
    const google::protobuf::RepeatedPtrField<v1::Route>& routes) {
  if (static_cast<size_t>(routes.size()) > kMaxPolicyRoutes) {
    return absl::InvalidArgumentError(
        absl::StrCat("too many routes: ", routes.size(), " (at most ", kMaxPolicyRoutes, ")"));
  }
  std::vector<std::pair<PolicyRoute, int>> indexed;
  indexed.reserve(routes.size());
  for (int i = 0; i < routes.size(); ++i) {
    const v1::Route& r = routes[i];
    absl::StatusOr<Prefix> prefix = ParsePrefix(r.destination().prefix());
    if (!prefix.ok()) return RouteError(i, prefix.status());
    PolicyRoute route{.prefix = *prefix};
    switch (r.action()) {
      case v1::ROUTE_ACTION_ALLOW:
        route.action = Action::kAllow;
        break;
      case v1::ROUTE_ACTION_PROHIBIT:
        route.action = Action::kProhibit;
        break;
      default:
        return RouteError(i, absl::InvalidArgumentError(absl::StrCat(
                                 prefix->ToString(), " has no action (", r.action(),
                                 "); use ROUTE_ACTION_ALLOW or ROUTE_ACTION_PROHIBIT")));
    }
    indexed.emplace_back(route, i);
  }
  return SortAndCheck(std::move(indexed));
}

absl::StatusOr<PolicySet> MakePolicySet(std::vector<PolicyRoute> routes) {
  std::vector<std::pair<PolicyRoute, int>> indexed;
  indexed.reserve(routes.size());
  for (size_t i = 0; i < routes.size(); ++i) indexed.emplace_back(routes[i], static_cast<int>(i));
  return SortAndCheck(std::move(indexed));
}

PolicySet ClosedPolicy() {
  PolicyRoute v4{.prefix = {.family = AF_INET}, .action = Action::kProhibit};
  PolicyRoute v6{.prefix = {.family = AF_INET6}, .action = Action::kProhibit};
  return {v4, v6};
}

std::string Digest(const PolicySet& set) {
  fs::Sha256 sha;
  for (const PolicyRoute& r : set) {
    sha.Update(absl::StrCat(ActionName(r.action), " ", r.prefix.ToString(), "\n"));
  }
  return sha.HexDigest();
}

PolicyDiff Diff(const PolicySet& installed, const PolicySet& wanted) {
  PolicyDiff d;
  auto add = [&d](int phase, const PolicyRoute& r, RouteChange::Kind kind) {
    d.phases[phase].push_back({r, kind});
  };
  size_t i = 0;
  size_t j = 0;
  // Both sets are sorted by prefix: one merge pass.
  while (i < installed.size() || j < wanted.size()) {
    if (j == wanted.size() || (i < installed.size() && installed[i].prefix < wanted[j].prefix)) {
      const PolicyRoute& gone = installed[i++];
      add(gone.action == Action::kAllow ? 3 : 4, gone, RouteChange::Kind::kRemove);
      ++d.removed;
    } else if (i == installed.size() || wanted[j].prefix < installed[i].prefix) {
      const PolicyRoute& fresh = wanted[j++];
      add(fresh.action == Action::kProhibit ? 0 : 1, fresh, RouteChange::Kind::kAdd);
      ++d.added;
    } else {
      const PolicyRoute& now = wanted[j++];
      if (installed[i++].action != now.action) {
        add(now.action == Action::kProhibit ? 0 : 2, now, RouteChange::Kind::kReplace);
        ++d.replaced;
      }
    }
  }
  return d;
}

const PolicyRoute* LongestMatch(const PolicySet& set, int family, const uint8_t* address) {
  const PolicyRoute* best = nullptr;
  for (const PolicyRoute& r : set) {
    if (r.prefix.Contains(family, address) &&
        (best == nullptr || r.prefix.length > best->prefix.length)) {
      best = &r;
    }
  }
  return best;
}

absl::StatusOr<GenerationVerdict> CheckGeneration(uint64_t applied,
                                                  const std::string& applied_digest,
                                                  uint64_t requested,
                                                  const std::string& requested_digest) {
  if (requested == 0) return absl::InvalidArgumentError("generation 0 is never valid");
  if (requested < applied) {
    return absl::FailedPreconditionError(
        absl::StrCat("generation ", requested, " is older than the applied generation ", applied));
  }
  if (requested == applied) {
    if (requested_digest == applied_digest) return GenerationVerdict::kAlreadyApplied;
    return absl::FailedPreconditionError(
        absl::StrCat("generation ", requested,
                     " is already applied with other routes; send a higher generation"));
  }
  return GenerationVerdict::kApply;
}

}  // namespace lazaret::netrouter
