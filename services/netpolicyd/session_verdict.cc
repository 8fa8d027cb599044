// Session::Test: `lazaret net test SESSION HOST:PORT`. Judges an address by
// the applied policy and asks the router's kernel the same question; a
// name is judged by the name policy, then resolved upstream (only when the
// policy answers it) without installing anything. See session.h.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/netpolicyd/session.h"
#include "services/vocab/domain_pattern.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rt = ::lazaret::netrouter::v1;

bool IsDnsPort(uint32_t port, rt::Protocol protocol) {
  return port == 53 || (port == 853 && protocol == rt::PROTOCOL_TCP);
}

}  // namespace

absl::StatusOr<pb::TestDestinationResponse> Session::Test(const pb::TestDestinationRequest& req) {
  std::shared_ptr<const CompiledPolicy> policy = Applied();
  if (policy == nullptr) return absl::FailedPreconditionError("no policy applied yet");
  if (req.port() > 65535) return absl::InvalidArgumentError("the port is 0-65535");
  const rt::Protocol protocol =
      req.protocol() == rt::PROTOCOL_UNSPECIFIED ? rt::PROTOCOL_TCP : req.protocol();
  absl::string_view host = req.host();
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {
    host = host.substr(1, host.size() - 2);
  }
  pb::TestDestinationResponse resp;

  // One address: the policy's rule (or, for an answered name, the name
  // route it would get) and the kernel's lookup.
  auto judge = [&](const IpPrefix& address, const std::string& name) {
    pb::AddressVerdict* v = resp.add_addresses();
    v->set_address(address.Address());
    const pb::Rule& rule = policy->Evaluate(address);
    *v->mutable_rule() = rule;
    v->set_allowed(rule.action() == pb::RULE_ACTION_ALLOW);
    const pb::Rule* deciding = nullptr;
    if (!v->allowed() && !name.empty() && policy->AdmitsNameAddress(address, &deciding)) {
      v->set_allowed(true);
      pb::Rule* named = v->mutable_rule();
      named->Clear();
      named->mutable_destination()->set_prefix(address.ToString());
      named->set_action(pb::RULE_ACTION_ALLOW);
      named->mutable_source()->set_kind(pb::RULE_KIND_NAME);
      named->mutable_source()->set_detail(
          absl::StrCat(name, " (the route is installed when the sandbox resolves it)"));
    }
    if (IsDnsPort(req.port(), protocol)) {
      v->set_allowed(false);
      pb::Rule* dns_rule = v->mutable_rule();
      dns_rule->Clear();
      dns_rule->mutable_destination()->set_prefix(address.ToString());
      dns_rule->set_action(pb::RULE_ACTION_DENY);
      dns_rule->mutable_source()->set_kind(pb::RULE_KIND_ALWAYS);
      dns_rule->mutable_source()->set_detail(
          "DNS port: the only resolver is the router's, on 127.0.0.1:53");
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    rt::LookupRouteRequest lookup;
    lookup.set_address(address.Address());
    lookup.set_port(req.port());
    lookup.set_protocol(protocol);
    rt::LookupRouteResponse kernel;
    if (router_->LookupRoute(&ctx, lookup, &kernel).ok()) *v->mutable_kernel() = kernel;
    if (v->allowed()) resp.set_allowed(true);
  };

  absl::StatusOr<IpPrefix> address = IpPrefix::ParseAddress(host);
  if (address.ok()) {
    judge(*address, "");
    const pb::AddressVerdict& v = resp.addresses(0);
    std::string explanation =
        absl::StrCat(req.host(), ":", req.port(), v.allowed() ? " allowed" : " denied", " by ",
                     DescribeRule(v.rule()));
    if (!v.allowed() && v.rule().source().kind() == pb::RULE_KIND_HOST_NETWORK) {
      absl::StrAppend(&explanation,
                      ": a network the host is directly connected to; only an allow "
                      "of exactly ",
                      v.rule().destination().prefix(), " (or of a narrower prefix) opens it");
    }
    if (policy->host_unknown()) {
      absl::StrAppend(&explanation,
                      " (everything is closed: lazaret-netpolicyd cannot read the "
                      "host's addresses and routes just now)");
    }
    resp.set_explanation(explanation);
    return resp;
  }
  if (absl::StrContains(host, "*")) return absl::InvalidArgumentError("a name, not a pattern");
  absl::StatusOr<std::string> name = vocab::NormalizeDnsPattern(host);
  if (!name.ok()) return name.status();
  NameVerdict verdict = policy->MatchName(*name);
  resp.set_name_answered(verdict.answered);
  *resp.mutable_name_rule() = verdict.rule;
  if (!verdict.answered) {
    resp.set_explanation(absl::StrCat(*name, " is not answered (",
                                      verdict.rule.pattern().empty()
                                          ? "not listed"
                                          : absl::StrCat("denied by ", verdict.rule.pattern()),
                                      "): nothing about it is asked upstream"));
    return resp;
  }
  std::shared_ptr<Resolver> resolver = CurrentResolver();
  std::vector<std::string> labels = absl::StrSplit(*name, '.');
  std::string failure;
  for (uint16_t qtype : {dns::kTypeA, dns::kTypeAaaa}) {
    dns::Question question{labels, qtype, dns::kClassIn};
    absl::StatusOr<dns::Response> response = resolver->Resolve(question);
    if (!response.ok()) {
      failure = std::string(response.status().message());
      continue;
    }
    for (const auto& rr : dns::FollowChain(*response, question).addresses) {
      judge(RecordAddress(rr), *name);
    }
  }
  const std::string target = absl::StrCat(*name, ":", req.port());
  const std::string listed = absl::StrCat("answered by ", verdict.rule.pattern());
  if (resp.addresses().empty()) {
    resp.set_explanation(absl::StrCat(target, " denied: the name is ", listed,
                                      " but resolves to no address",
                                      failure.empty() ? "" : " (" + failure + ")"));
    return resp;
  }
  int allowed = 0;
  const pb::AddressVerdict* first_denied = nullptr;
  for (const auto& v : resp.addresses()) {
    if (v.allowed()) {
      ++allowed;
    } else if (first_denied == nullptr) {
      first_denied = &v;
    }
  }
  std::string explanation =
      absl::StrCat(target, allowed > 0 ? " allowed" : " denied", ": the name is ", listed, "; ",
                   allowed, " of ", resp.addresses_size(), " addresses allowed");
  if (first_denied != nullptr) {
    absl::StrAppend(&explanation, "; ", first_denied->address(), " denied by ",
                    DescribeRule(first_denied->rule()));
  }
  resp.set_explanation(explanation);
  return resp;
}

}  // namespace lazaret::netpolicyd
