#include "clients/lazaret/net/format.h"

#include <time.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "services/netpolicyd/route_digest.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::net {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rpb = ::lazaret::netrouter::v1;
using vocab::EscapeForTerminal;

std::string LayerText(::lazaret::common::v1::ConfigLayer layer) {
  switch (layer) {
    case ::lazaret::common::v1::CONFIG_LAYER_EMBEDDED_DEFAULT:
      return "default";
    case ::lazaret::common::v1::CONFIG_LAYER_USER:
      return "user";
    case ::lazaret::common::v1::CONFIG_LAYER_WORKSPACE:
      return "workspace";
    case ::lazaret::common::v1::CONFIG_LAYER_EXPLICIT:
      return "--config";
    default:
      return "";
  }
}

// "layer file:line key", leaving out what is not set.
std::string ConfigPlace(const pb::RuleSource& s) {
  std::vector<std::string> parts;
  if (std::string layer = LayerText(s.layer()); !layer.empty()) parts.push_back(layer);
  if (!s.file().empty()) {
    parts.push_back(s.line() > 0 ? absl::StrCat(EscapeForTerminal(s.file()), ":", s.line())
                                 : EscapeForTerminal(s.file()));
  }
  if (!s.key_path().empty()) parts.push_back(EscapeForTerminal(s.key_path()));
  return parts.empty() ? "configuration" : absl::StrJoin(parts, " ");
}

std::string Expiry(const pb::RuleSource& s, int64_t now) {
  if (s.expires_unix() == 0) return "";
  const int64_t left = s.expires_unix() - now;
  return left > 0 ? absl::StrCat(", expires in ", RemainingText(left)) : ", expired";
}

std::string WithDetail(absl::string_view what, const std::string& detail) {
  return detail.empty() ? std::string(what) : absl::StrCat(what, " ", EscapeForTerminal(detail));
}

std::string ActionText(pb::RuleAction a) {
  switch (a) {
    case pb::RULE_ACTION_ALLOW:
      return "allow";
    case pb::RULE_ACTION_DENY:
      return "deny";
    default:
      return "?";
  }
}

std::string Padded(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string KernelText(const rpb::LookupRouteResponse& k) {
  std::vector<std::string> parts;
  if (!k.route_type().empty()) parts.push_back(EscapeForTerminal(k.route_type()));
  if (!k.device().empty()) parts.push_back(absl::StrCat("via ", EscapeForTerminal(k.device())));
  if (!k.policy_route().prefix().empty()) {
    parts.push_back(absl::StrCat("policy route ", EscapeForTerminal(k.policy_route().prefix())));
  }
  if (!k.rule().empty()) parts.push_back(absl::StrCat("rule ", EscapeForTerminal(k.rule())));
  return absl::StrCat(k.allowed() ? "allowed" : "denied",
                      parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")"));
}

std::string RuleText(const pb::Rule& r, int64_t now) {
  return absl::StrCat(ActionText(r.action()), " ", EscapeForTerminal(r.destination().prefix()),
                      " (", RuleSourceText(r.source(), now), ")");
}

std::string LogKindText(pb::LogKind k) {
  switch (k) {
    case pb::LOG_KIND_NAME_REFUSED:
      return "name-refused";
    case pb::LOG_KIND_NAME_ANSWERED:
      return "name-answered";
    case pb::LOG_KIND_ADDRESS_DROPPED:
      return "address-dropped";
    case pb::LOG_KIND_POLICY_APPLIED:
      return "policy-applied";
    case pb::LOG_KIND_NAME_FAILED:
      return "name-failed";
    case pb::LOG_KIND_CONNECT_ALLOWED:
      return "connect-allowed";
    case pb::LOG_KIND_CONNECT_REFUSED:
      return "connect-refused";
    case pb::LOG_KIND_NAME_HELD:
      return "name-held";
    case pb::LOG_KIND_NAME_DECIDED:
      return "name-decided";
    case pb::LOG_KIND_HOST_NETWORKS_CHANGED:
      return "host-networks";
    case pb::LOG_KIND_HOST_NETWORKS_UNKNOWN:
      return "host-unknown";
    case pb::LOG_KIND_LOG_GAP:
      return "log-gap";
    default:
      return "?";
  }
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

// The networks the host is directly connected to (denied, followed live)
// and the on-link routes deliberately left open, with their interfaces.
void AppendHostNetworks(const pb::SessionPolicy& p, std::string* out) {
  absl::StrAppend(out,
                  "\nhost networks (on-link, followed live; only an exact allow opens one):\n");
  bool any = false;
  for (const pb::Rule& r : p.rules()) {
    if (r.source().kind() != pb::RULE_KIND_HOST_NETWORK) continue;
    any = true;
    absl::StrAppend(out, "  ", Padded(ActionText(r.action()), 6), "  ",
                    EscapeForTerminal(r.destination().prefix()), "  ",
                    EscapeForTerminal(r.source().detail()), "\n");
  }
  if (!any) absl::StrAppend(out, "  (none)\n");
  if (p.skipped_host_routes().empty()) return;
  absl::StrAppend(out, "host routes not treated as host networks:\n");
  for (const pb::HostRoute& h : p.skipped_host_routes()) {
    absl::StrAppend(out, "  ", EscapeForTerminal(h.cidr().prefix()), " on ",
                    OrDash(EscapeForTerminal(h.interface())), "  ", EscapeForTerminal(h.reason()),
                    "\n");
  }
}

}  // namespace

std::string RemainingText(int64_t s) {
  if (s <= 0) return "expired";
  if (s < 120) return absl::StrCat(s, " s");
  if (s < 7200) return absl::StrCat(s / 60, " min");
  const int64_t min = (s % 3600) / 60;
  return min == 0 ? absl::StrCat(s / 3600, " h") : absl::StrCat(s / 3600, " h ", min, " min");
}

std::string RuleSourceText(const pb::RuleSource& s, int64_t now) {
  switch (s.kind()) {
    case pb::RULE_KIND_CONFIG:
      return ConfigPlace(s);
    case pb::RULE_KIND_DERIVED:
      return absl::StrCat(
          WithDetail("derived from", s.detail()),
          s.file().empty() && s.key_path().empty() ? "" : absl::StrCat(" (", ConfigPlace(s), ")"));
    case pb::RULE_KIND_HOST_ADDRESS:
      return WithDetail("host address", s.detail());
    case pb::RULE_KIND_HOST_NETWORK:
      return WithDetail("host network", s.detail());
    case pb::RULE_KIND_GATEWAY:
      return WithDetail("sidecar gateway", s.detail());
    case pb::RULE_KIND_ALWAYS:
      return WithDetail("always denied", s.detail());
    case pb::RULE_KIND_DEFAULT:
      return WithDetail("family default", s.detail());
    case pb::RULE_KIND_NAME:
      return absl::StrCat(WithDetail("name", s.detail()), Expiry(s, now));
    case pb::RULE_KIND_LIVE:
      return absl::StrCat(WithDetail("live", s.detail()),
                          s.expires_unix() == 0 ? ", for the rest of the session" : Expiry(s, now));
    default:
      return WithDetail("unknown source", s.detail());
  }
}

absl::StatusOr<std::string> RoutesDigest(
    const google::protobuf::RepeatedPtrField<rpb::Route>& routes) {
  return netpolicyd::RoutesDigest(routes);
}

std::string PolicyText(const pb::SessionPolicy& p, int64_t now) {
  std::string out;
  absl::StrAppend(&out, "session     ", EscapeForTerminal(p.session().id()), "\n");
  absl::StrAppend(&out, "profile     ", EscapeForTerminal(p.profile()), "\n");
  absl::StrAppend(&out, "generation  ", p.generation(), "\n");
  absl::StrAppend(&out, "digest      ", OrDash(EscapeForTerminal(p.digest())), "\n");
  absl::StrAppend(&out, "names_unrestricted  ",
                  p.names_unrestricted()
                      ? "yes (every name resolves; addresses are still policed)\n"
                      : "no (only the names below resolve; others are refused and logged)\n");
  std::vector<std::string> upstreams;
  for (const std::string& u : p.dns_upstream()) upstreams.push_back(EscapeForTerminal(u));
  absl::StrAppend(&out, "dns upstream  ", upstreams.empty() ? "-" : absl::StrJoin(upstreams, ", "),
                  "\n");

  absl::StrAppend(&out, "\nrules (longest prefix first; at equal prefix the winner first):\n");
  size_t width = 11;
  for (const pb::Rule& r : p.rules()) {
    width = std::max(width, EscapeForTerminal(r.destination().prefix()).size());
  }
  absl::StrAppend(&out, "  ACTION  ", Padded("DESTINATION", width), "  SOURCE\n");
  for (const pb::Rule& r : p.rules()) {
    absl::StrAppend(&out, "  ", Padded(ActionText(r.action()), 6), "  ",
                    Padded(EscapeForTerminal(r.destination().prefix()), width), "  ",
                    RuleSourceText(r.source(), now), "\n");
  }
  if (p.rules().empty()) absl::StrAppend(&out, "  (none)\n");
  AppendHostNetworks(p, &out);

  absl::StrAppend(&out, "\nnames:\n");
  size_t name_width = 4;
  for (const pb::NameRule& n : p.names()) {
    name_width = std::max(name_width, EscapeForTerminal(n.pattern()).size());
  }
  for (const pb::NameRule& n : p.names()) {
    absl::StrAppend(&out, "  ", Padded(ActionText(n.action()), 6), "  ",
                    Padded(EscapeForTerminal(n.pattern()), name_width), "  ",
                    RuleSourceText(n.source(), now), "\n");
  }
  if (p.names().empty()) {
    absl::StrAppend(&out, p.names_unrestricted() ? "  (none listed; every name resolves)\n"
                                                 : "  (none listed; no name resolves)\n");
  }

  absl::StrAppend(&out, "\n");
  if (!p.router_reachable()) {
    absl::StrAppend(&out, "installed   unknown: the session's router did not answer\n");
    return out;
  }
  absl::StrAppend(&out, "installed   ", p.installed_size(), " routes, ");
  absl::StatusOr<std::string> digest = RoutesDigest(p.installed());
  if (!digest.ok()) {
    absl::StrAppend(&out, "unreadable (", EscapeForTerminal(digest.status().message()), ")\n");
  } else if (*digest == p.digest()) {
    absl::StrAppend(&out, "matching the applied digest\n");
  } else {
    absl::StrAppend(&out, "NOT matching the applied digest (read back ", *digest, ")\n");
  }
  return out;
}

absl::StatusOr<std::string> PolicyJson(const pb::SessionPolicy& p) {
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.always_print_primitive_fields = true;
  o.preserve_proto_field_names = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(p, &out, o).ok()) {
    return absl::InternalError("the policy could not be written as JSON");
  }
  return out;
}

std::string TestText(const pb::TestDestinationResponse& r, const std::string& destination,
                     int64_t now) {
  std::string out =
      absl::StrCat(EscapeForTerminal(destination), ": ", r.allowed() ? "allowed" : "denied", "\n");
  if (r.has_name_rule() || r.name_answered()) {
    absl::StrAppend(&out, "  name: ", r.name_answered() ? "answered" : "refused");
    if (r.has_name_rule()) {
      absl::StrAppend(&out, " by ", ActionText(r.name_rule().action()), " ",
                      EscapeForTerminal(r.name_rule().pattern()), " (",
                      RuleSourceText(r.name_rule().source(), now), ")");
    }
    absl::StrAppend(&out, "\n");
  }
  size_t width = 0;
  for (const pb::AddressVerdict& a : r.addresses()) {
    width = std::max(width, EscapeForTerminal(a.address()).size());
  }
  for (const pb::AddressVerdict& a : r.addresses()) {
    absl::StrAppend(&out, "  ", Padded(EscapeForTerminal(a.address()), width), "  ",
                    a.allowed() ? "allowed" : "denied ");
    if (a.has_rule()) absl::StrAppend(&out, " by ", RuleText(a.rule(), now));
    absl::StrAppend(&out, "\n  ", std::string(width, ' '),
                    "  kernel: ", a.has_kernel() ? KernelText(a.kernel()) : "not asked");
    if (a.has_kernel() && a.kernel().allowed() != a.allowed()) {
      absl::StrAppend(&out, "  MISMATCH: the policy and the kernel disagree");
    }
    absl::StrAppend(&out, "\n");
  }
  if (!r.explanation().empty()) {
    absl::StrAppend(&out, "  ", EscapeForTerminal(r.explanation()), "\n");
  }
  return out;
}

std::string LogLine(const pb::LogEntry& e) {
  const int64_t ms = std::max<int64_t>(0, e.time_unix_ms());
  const time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  std::string line = absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ  %-15s", tm.tm_year + 1900,
                                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                                     static_cast<int>(ms % 1000), LogKindText(e.kind()));
  if (e.kind() == pb::LOG_KIND_CONNECT_ALLOWED || e.kind() == pb::LOG_KIND_CONNECT_REFUSED) {
    const std::string dst = EscapeForTerminal(e.destination());
    const bool v6 = dst.find(':') != std::string::npos;
    absl::StrAppend(&line, "  ", OrDash(EscapeForTerminal(e.process())), "  ", v6 ? "[" : "", dst,
                    v6 ? "]" : "", ":", e.port(), "  ",
                    e.has_rule() ? RuleText(e.rule(), secs) : "-");
  } else {
    std::vector<std::string> addresses;
    for (const std::string& a : e.addresses()) addresses.push_back(EscapeForTerminal(a));
    absl::StrAppend(&line, "  ", OrDash(EscapeForTerminal(e.name())), "  ",
                    OrDash(EscapeForTerminal(e.query_type())), "  ",
                    addresses.empty() ? "-" : absl::StrJoin(addresses, ","));
  }
  if (!e.decision().empty()) absl::StrAppend(&line, "  ", EscapeForTerminal(e.decision()));
  if (!e.approver().empty()) absl::StrAppend(&line, " by ", EscapeForTerminal(e.approver()));
  if (!e.detail().empty()) absl::StrAppend(&line, "  ", EscapeForTerminal(e.detail()));
  if (e.count() > 1) absl::StrAppend(&line, "  (x", e.count(), ")");
  return line;
}

std::string RequestLine(const ::lazaret::egress::v1::RequestRecord& r) {
  const int64_t ms = std::max<int64_t>(0, r.time_unix_ms());
  const time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  std::string line = absl::StrFormat(
      "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ  %-8s  %s %s%s  ", tm.tm_year + 1900, tm.tm_mon + 1,
      tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000),
      OrDash(EscapeForTerminal(r.protocol())), OrDash(EscapeForTerminal(r.method())),
      OrDash(EscapeForTerminal(r.host())), EscapeForTerminal(r.path()));
  absl::StrAppend(&line, r.status() == 0 ? std::string("-") : absl::StrCat(r.status()), "  ",
                  r.request_bytes(), "B up ", r.response_bytes(), "B down  ", r.duration_ms(),
                  "ms");
  if (r.secrets_size() > 0) {
    std::vector<std::string> names;
    for (const std::string& n : r.secrets()) names.push_back(EscapeForTerminal(n));
    absl::StrAppend(&line, "  secrets ", absl::StrJoin(names, ","));
  }
  if (!r.rule().empty()) absl::StrAppend(&line, "  rule: ", EscapeForTerminal(r.rule()));
  if (!r.refused().empty()) absl::StrAppend(&line, "  REFUSED: ", EscapeForTerminal(r.refused()));
  return line;
}

absl::StatusOr<std::string> RequestJson(const ::lazaret::egress::v1::RequestRecord& r) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(r, &out, o).ok()) {
    return absl::InternalError("a request record could not be written as JSON");
  }
  out.push_back('\n');
  return out;
}

absl::StatusOr<std::string> LogEntryJson(const pb::LogEntry& e) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(e, &out, o).ok()) {
    return absl::InternalError("a log entry could not be written as JSON");
  }
  out.push_back('\n');
  return out;
}

std::string AppliedText(const pb::PolicyApplied& a) {
  return absl::StrCat("generation ", a.generation(), " (", a.routes(), " routes, digest ",
                      OrDash(EscapeForTerminal(a.digest())), ")");
}

}  // namespace lazaret::cli::net
