// Session's DNS path: a query relayed by the router from the sandbox, the
// name policy, the upstream, the address filter, the name routes, the
// answer. See session.h.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/netpolicyd/names.h"
#include "services/netpolicyd/session.h"

namespace lazaret::netpolicyd {

namespace {

namespace pb = ::lazaret::netpolicy::v1;

// A session keeps at most this many name routes; beyond it the one that
// expires first makes room.
constexpr size_t kMaxNameRoutes = 8192;

const char* RcodeName(dns::Rcode rcode) {
  switch (rcode) {
    case dns::Rcode::kNoError:
      return "NOERROR";
    case dns::Rcode::kNxDomain:
      return "NXDOMAIN";
    case dns::Rcode::kServFail:
      return "SERVFAIL";
    case dns::Rcode::kRefused:
      return "REFUSED";
    default:
      return "an error";
  }
}

}  // namespace

IpPrefix RecordAddress(const dns::ResourceRecord& rr) {
  return IpPrefix::Make(rr.type == dns::kTypeA ? IpPrefix::Family::kIpv4 : IpPrefix::Family::kIpv6,
                        rr.address, rr.type == dns::kTypeA ? 32 : 128);
}

std::string Session::AnswerDns(absl::string_view message, bool udp) {
  absl::StatusOr<dns::Query> query = dns::ParseQuery(message);
  if (!query.ok()) {
    std::optional<uint16_t> id = dns::PeekId(message);
    return id.has_value() ? dns::BuildFormErr(*id) : "";
  }
  const std::string name_text = dns::NameText(query->question.name);
  const std::string type = dns::TypeName(query->question.qtype);
  std::shared_ptr<const CompiledPolicy> policy = Applied();
  if (policy == nullptr) return dns::BuildAnswer(*query, dns::Rcode::kServFail, {}, udp);
  if (query->question.qclass != dns::kClassIn) {
    Log(pb::LOG_KIND_NAME_REFUSED, name_text, type, {},
        absl::StrCat("class ", query->question.qclass, " is not answered"));
    return dns::BuildAnswer(*query, dns::Rcode::kRefused, {}, udp);
  }
  const std::string name = PlainName(query->question.name);
  NameVerdict verdict = policy->MatchName(name);
  if (!verdict.answered) {
    std::string why = name.empty() ? "not a plain host name"
                      : verdict.rule.pattern().empty()
                          ? "not listed"
                          : absl::StrCat("denied by ", verdict.rule.pattern());
    Log(pb::LOG_KIND_NAME_REFUSED, name_text, type, {}, why + "; nothing was asked upstream");
    return dns::BuildAnswer(*query, dns::Rcode::kRefused, {}, udp);
  }
  if (query->question.qtype != dns::kTypeA && query->question.qtype != dns::kTypeAaaa) {
    Log(pb::LOG_KIND_NAME_ANSWERED, name_text, type, {},
        "only A and AAAA are asked upstream: empty answer");
    return dns::BuildAnswer(*query, dns::Rcode::kNoError, {}, udp);
  }
  return Answered(*query, name_text, *policy, udp);
}

std::string Session::Answered(const dns::Query& query, const std::string& name_text,
                              const CompiledPolicy& policy, bool udp) {
  const std::string type = dns::TypeName(query.question.qtype);
  std::shared_ptr<Resolver> resolver = CurrentResolver();
  absl::StatusOr<dns::Response> response = resolver->Resolve(query.question);
  if (!response.ok()) {
    Log(pb::LOG_KIND_NAME_FAILED, name_text, type, {}, std::string(response.status().message()));
    return dns::BuildAnswer(query, dns::Rcode::kServFail, {}, udp);
  }
  if (response->rcode != dns::Rcode::kNoError) {
    dns::Rcode rcode =
        response->rcode == dns::Rcode::kNxDomain ? dns::Rcode::kNxDomain : dns::Rcode::kServFail;
    Log(pb::LOG_KIND_NAME_ANSWERED, name_text, type, {},
        absl::StrCat("upstream answered ", RcodeName(response->rcode)));
    return dns::BuildAnswer(query, rcode, {}, udp);
  }
  dns::Chain chain = dns::FollowChain(*response, query.question);
  std::vector<dns::ResourceRecord> kept;
  std::vector<std::string> dropped;
  std::string dropped_why;
  for (const auto& rr : chain.addresses) {
    const pb::Rule* deciding = nullptr;
    IpPrefix address = RecordAddress(rr);
    if (policy.AdmitsNameAddress(address, &deciding)) {
      kept.push_back(rr);
    } else {
      dropped.push_back(address.Address());
      if (dropped_why.empty()) dropped_why = DescribeRule(*deciding);
    }
  }
  if (!dropped.empty()) {
    Log(pb::LOG_KIND_ADDRESS_DROPPED, name_text, type, dropped,
        absl::StrCat("denied by ", dropped_why, kept.empty() ? "; the name was refused" : ""));
  }
  if (kept.empty() && !dropped.empty())
    return dns::BuildAnswer(query, dns::Rcode::kRefused, {}, udp);

  const std::string name = PlainName(query.question.name);
  if (uint64_t version = AddNameRoutes(name, kept, policy); version != 0) {
    absl::StatusOr<pb::PolicyApplied> applied = Apply(version, /*force=*/false);
    if (!applied.ok()) {
      Log(pb::LOG_KIND_NAME_FAILED, name_text, type, {},
          absl::StrCat("the name routes were not installed: ", applied.status().message()));
      return dns::BuildAnswer(query, dns::Rcode::kServFail, {}, udp);
    }
  }
  std::vector<dns::ResourceRecord> answers = chain.cnames;
  uint32_t lowest = UINT32_MAX;
  for (const auto& rr : kept) lowest = std::min(lowest, rr.ttl);
  for (auto& rr : answers) rr.ttl = std::min(rr.ttl, lowest);
  std::vector<std::string> addresses;
  for (const auto& rr : kept) {
    addresses.push_back(RecordAddress(rr).Address());
    answers.push_back(rr);
  }
  Log(pb::LOG_KIND_NAME_ANSWERED, name_text, type, std::move(addresses),
      chain.cnames.empty() ? "" : absl::StrCat("via ", chain.cnames.size(), " CNAME"));
  return dns::BuildAnswer(query, dns::Rcode::kNoError, answers, udp);
}

uint64_t Session::AddNameRoutes(const std::string& name,
                                std::vector<dns::ResourceRecord>& addresses,
                                const CompiledPolicy& policy) {
  const int64_t now = Now();
  std::lock_guard<std::mutex> lock(mu_);
  bool added = false;
  for (auto& rr : addresses) {
    IpPrefix address = RecordAddress(rr);
    const pb::Rule* deciding = nullptr;
    policy.AdmitsNameAddress(address, &deciding);
    // Allowed without a name route (the public internet is allowed).
    if (deciding->action() == pb::RULE_ACTION_ALLOW) continue;
    int64_t lifetime = std::clamp<int64_t>(rr.ttl, options_.name_ttl_floor, options_.name_ttl_cap);
    int64_t expires = now + lifetime;
    NameKey key{address, name};
    auto it = name_routes_.find(key);
    if (it != name_routes_.end() && it->second.expires_unix > now) {
      it->second.expires_unix = std::max(it->second.expires_unix, expires);
    } else {
      if (name_routes_.size() >= kMaxNameRoutes) {
        auto first = std::min_element(name_routes_.begin(), name_routes_.end(),
                                      [](const auto& a, const auto& b) {
                                        return a.second.expires_unix < b.second.expires_unix;
                                      });
        name_routes_.erase(first);
      }
      it = name_routes_.insert_or_assign(key, NameRoute{address, name, expires}).first;
      added = true;
    }
    rr.ttl = static_cast<uint32_t>(std::min<int64_t>(rr.ttl, it->second.expires_unix - now));
  }
  if (added) ++version_;
  return applied_version_ < version_ ? version_ : 0;
}

}  // namespace lazaret::netpolicyd
