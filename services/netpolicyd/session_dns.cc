// Session's DNS path: a query relayed by the router from the sandbox, the
// name policy, the upstream, the address filter, the name routes, the
// answer; in `egress = "ask"`, an unlisted name held for the session's
// approvers (held_names.h). See session.h.
#include <algorithm>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/netpolicyd/session.h"
#include "services/vocab/domain_pattern.h"
#include "services/wire/egress_endpoint.h"

namespace lazaret::netpolicyd {

namespace {

namespace pb = ::lazaret::netpolicy::v1;

// A session keeps at most this many name routes; beyond it the one that
// expires first makes room.
constexpr size_t kMaxNameRoutes = 8192;
// Intercepted names approved once, remembered for the proxy at most.
constexpr size_t kMaxProxyApproved = 1024;

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

// The session as its HeldNames sees it: resolving and answering through
// the session's own path, live allows and denies, its log.
class Session::HeldHost final : public HeldNamesHost {
 public:
  explicit HeldHost(Session* session) : session_(session) {}
  ResolvedName Resolve(const dns::Question& question) override {
    return session_->ResolveForApproval(question);
  }
  std::string AnswerFrom(const dns::Query& query, bool udp, const ResolvedName& resolved) override {
    return session_->AnswerFromResolved(query, udp, resolved);
  }
  absl::Status AllowName(const std::string& name) override { return Change(name, true); }
  absl::Status DenyName(const std::string& name) override { return Change(name, false); }
  void Log(pb::LogEntry entry) override { session_->Log(std::move(entry)); }

 private:
  // The same live change as `lazaret net allow|deny NAME`.
  absl::Status Change(const std::string& name, bool allow) {
    pb::ChangeSessionRequest request;
    request.mutable_session()->set_id(session_->id());
    request.set_name(name);
    request.set_action(allow ? pb::RULE_ACTION_ALLOW : pb::RULE_ACTION_DENY);
    return session_->Change(request).status();
  }
  Session* const session_;
};

Session::~Session() {
  std::lock_guard<std::mutex> lock(held_mu_);
  held_.reset();
}

HeldNames& Session::Held() {
  std::lock_guard<std::mutex> lock(held_mu_);
  if (held_ == nullptr) {
    held_host_ = std::make_unique<HeldHost>(this);
    held_ = std::make_unique<HeldNames>(id_, held_host_.get(), options_.approval, options_.held);
  }
  return *held_;
}

void Session::StopHeldNames() {
  std::lock_guard<std::mutex> lock(held_mu_);
  if (held_ != nullptr) held_->Stop();
}

std::optional<AskSettings> Session::AskMode() const {
  std::lock_guard<std::mutex> lock(mu_);
  const lazaret::config::v1::NetworkPolicy& network = inputs_.network;
  if (network.egress() != lazaret::config::v1::EGRESS_MODE_ASK) return std::nullopt;
  AskSettings settings;
  settings.timeout_seconds =
      network.ask_timeout_seconds() == 0 ? 60 : std::min(network.ask_timeout_seconds(), 300u);
  settings.unattended_wait = network.ask_unattended() == lazaret::config::v1::ASK_UNATTENDED_WAIT;
  return settings;
}

ResolvedName Session::ResolveForApproval(const dns::Question& question) {
  ResolvedName out;
  std::shared_ptr<const CompiledPolicy> policy = Applied();
  std::shared_ptr<Resolver> resolver = CurrentResolver();
  for (uint16_t type : {dns::kTypeA, dns::kTypeAaaa}) {
    dns::Question q = question;
    q.qtype = type;
    absl::StatusOr<dns::Response> response =
        resolver == nullptr ? absl::UnavailableError("no upstream") : resolver->Resolve(q);
    if (response.ok() && response->rcode == dns::Rcode::kNoError && policy != nullptr) {
      for (const auto& rr : dns::FollowChain(*response, q).addresses) {
        const pb::Rule* deciding = nullptr;
        auto& judged = out.addresses.emplace_back();
        judged.set_address(RecordAddress(rr).Address());
        judged.set_allowed(policy->AdmitsNameAddress(RecordAddress(rr), &deciding));
        if (!judged.allowed() && deciding != nullptr) judged.set_rule_text(DescribeRule(*deciding));
        if (out.addresses.size() >= 64) break;
      }
    }
    out.responses.emplace(type, std::move(response));
  }
  return out;
}

std::string Session::AnswerFromResolved(const dns::Query& query, bool udp,
                                        const ResolvedName& resolved) {
  std::shared_ptr<const CompiledPolicy> policy = Applied();
  if (policy == nullptr) return dns::BuildAnswer(query, dns::Rcode::kServFail, {}, udp);
  const std::string name_text = dns::NameText(query.question.name);
  // An approved name the egress proxy intercepts is answered as a listed
  // one, and the proxy may resolve it while the answer lives.
  if (const std::string name = vocab::PlainName(query.question.name); Intercepted(name)) {
    {
      const int64_t now = Now();
      std::lock_guard<std::mutex> lock(mu_);
      std::erase_if(proxy_approved_, [now](const auto& e) { return e.second <= now; });
      if (proxy_approved_.size() < kMaxProxyApproved || proxy_approved_.count(name) != 0) {
        proxy_approved_[name] = now + egress::kProxyAnswerTtl;
      }
    }
    return ProxyAnswer(query, name_text, udp);
  }
  auto it = resolved.responses.find(query.question.qtype);
  if (it == resolved.responses.end() || !it->second.ok()) {
    Log(pb::LOG_KIND_NAME_FAILED, name_text, dns::TypeName(query.question.qtype), {},
        it == resolved.responses.end() ? std::string("not asked upstream")
                                       : std::string(it->second.status().message()));
    return dns::BuildAnswer(query, dns::Rcode::kServFail, {}, udp);
  }
  return AnswerFrom(query, name_text, *policy, udp, *it->second, /*approved=*/true);
}

void Session::AnswerDns(absl::string_view message, bool udp,
                        std::unique_ptr<DnsResponder> responder) {
  absl::StatusOr<dns::Query> query = dns::ParseQuery(message);
  if (!query.ok()) {
    std::optional<uint16_t> id = dns::PeekId(message);
    responder->Answer(id.has_value() ? dns::BuildFormErr(*id) : "");
    return;
  }
  std::shared_ptr<const CompiledPolicy> policy = Applied();
  if (policy == nullptr) {
    responder->Answer(dns::BuildAnswer(*query, dns::Rcode::kServFail, {}, udp));
    return;
  }
  const std::string name = vocab::PlainName(query->question.name);
  if (query->question.qclass == dns::kClassIn && !name.empty() &&
      (query->question.qtype == dns::kTypeA || query->question.qtype == dns::kTypeAaaa)) {
    NameVerdict verdict = policy->MatchName(name);
    // Held: unlisted and not denied by a pattern (a deny is never asked).
    if (!verdict.answered && verdict.rule.pattern().empty()) {
      if (std::optional<AskSettings> ask = AskMode(); ask.has_value()) {
        Held().Hold(name, *query, udp, std::move(responder), *ask);
        return;
      }
    }
  }
  responder->Answer(AnswerNow(*query, udp, *policy));
}

std::string Session::AnswerNow(const dns::Query& query, bool udp, const CompiledPolicy& policy) {
  const std::string name_text = dns::NameText(query.question.name);
  const std::string type = dns::TypeName(query.question.qtype);
  if (query.question.qclass != dns::kClassIn) {
    Log(pb::LOG_KIND_NAME_REFUSED, name_text, type, {},
        absl::StrCat("class ", query.question.qclass, " is not answered"));
    return dns::BuildAnswer(query, dns::Rcode::kRefused, {}, udp);
  }
  const std::string name = vocab::PlainName(query.question.name);
  NameVerdict verdict = policy.MatchName(name);
  if (!verdict.answered) {
    std::string why = name.empty() ? "not a plain host name"
                      : verdict.rule.pattern().empty()
                          ? "not listed"
                          : absl::StrCat("denied by ", verdict.rule.pattern());
    Log(pb::LOG_KIND_NAME_REFUSED, name_text, type, {}, why + "; nothing was asked upstream");
    return dns::BuildAnswer(query, dns::Rcode::kRefused, {}, udp);
  }
  if (query.question.qtype != dns::kTypeA && query.question.qtype != dns::kTypeAaaa) {
    Log(pb::LOG_KIND_NAME_ANSWERED, name_text, type, {},
        "only A and AAAA are asked upstream: empty answer");
    return dns::BuildAnswer(query, dns::Rcode::kNoError, {}, udp);
  }
  if (Intercepted(name)) return ProxyAnswer(query, name_text, udp);
  return Answered(query, name_text, policy, udp);
}

bool Session::Intercepted(const std::string& name) const {
  if (name.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& pattern : inputs_.intercepted) {
    if (vocab::DomainCovers(pattern, name)) return true;
  }
  return false;
}

std::string Session::ProxyAnswer(const dns::Query& query, const std::string& name_text, bool udp) {
  std::vector<dns::ResourceRecord> answers;
  std::vector<std::string> addresses;
  if (query.question.qtype == dns::kTypeA) {
    dns::ResourceRecord rr;
    rr.owner = query.question.name;
    rr.type = dns::kTypeA;
    rr.ttl = egress::kProxyAnswerTtl;
    std::memcpy(rr.address.data(), egress::kProxyAddressBytes, 4);
    answers.push_back(std::move(rr));
    addresses.push_back(egress::kProxyAddress);
  }
  Log(pb::LOG_KIND_NAME_ANSWERED, name_text, dns::TypeName(query.question.qtype),
      std::move(addresses), "intercepted by the egress proxy");
  return dns::BuildAnswer(query, dns::Rcode::kNoError, answers, udp);
}

absl::StatusOr<pb::ResolveUpstreamResponse> Session::ResolveUpstream(absl::string_view asked) {
  // The proxy's name came from the sandbox (SNI, Host): only a plain host
  // name, compared as the DNS path compares.
  if (asked.size() > vocab::kMaxDomainLength + 1) {
    return absl::InvalidArgumentError("the name is longer than a DNS name");
  }
  std::string name = absl::AsciiStrToLower(asked);
  if (!name.empty() && name.back() == '.') name.pop_back();
  if (!vocab::IsPlainName(name)) {
    return absl::InvalidArgumentError("the name is not a plain host name");
  }
  constexpr char kType[] = "A+AAAA";
  pb::ResolveUpstreamResponse out;
  const auto refuse = [&](pb::LogKind kind, std::string why) {
    Log(kind, name, kType, {}, absl::StrCat("for the egress proxy: ", why));
    out.set_refused(std::move(why));
    return out;
  };
  std::shared_ptr<const CompiledPolicy> policy = Applied();
  std::shared_ptr<Resolver> resolver = CurrentResolver();
  if (policy == nullptr || resolver == nullptr) {
    return absl::UnavailableError("the session's policy is not applied yet");
  }
  if (!Intercepted(name)) {
    return refuse(pb::LOG_KIND_NAME_REFUSED, "the name is not intercepted in this session");
  }
  NameVerdict verdict = policy->MatchName(name);
  bool approved = false;
  if (!verdict.answered) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = proxy_approved_.find(name);
    approved = it != proxy_approved_.end() && it->second > Now();
  }
  if (!verdict.answered && !approved) {
    return refuse(
        pb::LOG_KIND_NAME_REFUSED,
        verdict.rule.pattern().empty()
            ? std::string("not listed; nothing was asked upstream")
            : absl::StrCat("denied by ", verdict.rule.pattern(), "; nothing was asked upstream"));
  }
  std::vector<dns::ResourceRecord> kept;
  std::vector<std::string> dropped;
  std::string dropped_why;
  std::string failed;
  const std::vector<std::string> labels = absl::StrSplit(name, '.');
  for (uint16_t type : {dns::kTypeA, dns::kTypeAaaa}) {
    dns::Question q{labels, type, dns::kClassIn};
    absl::StatusOr<dns::Response> response = resolver->Resolve(q);
    if (!response.ok()) {
      failed = std::string(response.status().message());
      continue;
    }
    if (response->rcode != dns::Rcode::kNoError) {
      failed = absl::StrCat("the upstream answered ", RcodeName(response->rcode));
      continue;
    }
    for (const auto& rr : dns::FollowChain(*response, q).addresses) {
      const pb::Rule* deciding = nullptr;
      if (policy->AdmitsNameAddress(RecordAddress(rr), &deciding)) {
        kept.push_back(rr);
      } else {
        dropped.push_back(RecordAddress(rr).Address());
        if (dropped_why.empty() && deciding != nullptr) dropped_why = DescribeRule(*deciding);
      }
    }
  }
  if (!dropped.empty()) {
    Log(pb::LOG_KIND_ADDRESS_DROPPED, name, kType, dropped,
        absl::StrCat("for the egress proxy: denied by ", dropped_why,
                     kept.empty() ? "; the name was refused" : ""));
  }
  if (kept.empty()) {
    if (!dropped.empty()) {
      out.set_refused(absl::StrCat("every address is denied by the policy (", dropped_why, ")"));
      return out;
    }
    return refuse(pb::LOG_KIND_NAME_FAILED,
                  failed.empty() ? std::string("the upstream answered no address") : failed);
  }
  if (uint64_t version = AddNameRoutes(name, kept, *policy, approved); version != 0) {
    absl::StatusOr<pb::PolicyApplied> applied = Apply(version, /*force=*/false);
    if (!applied.ok()) {
      Log(pb::LOG_KIND_NAME_FAILED, name, kType, {},
          absl::StrCat("for the egress proxy: the name routes were not installed: ",
                       applied.status().message()));
      return absl::UnavailableError(
          absl::StrCat("the name routes were not installed: ", applied.status().message()));
    }
  }
  std::vector<std::string> addresses;
  for (const auto& rr : kept) {
    addresses.push_back(RecordAddress(rr).Address());
    out.add_addresses(addresses.back());
  }
  Log(pb::LOG_KIND_NAME_ANSWERED, name, kType, std::move(addresses),
      approved ? "for the egress proxy (approved)" : "for the egress proxy");
  return out;
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
  return AnswerFrom(query, name_text, policy, udp, *response);
}

std::string Session::AnswerFrom(const dns::Query& query, const std::string& name_text,
                                const CompiledPolicy& policy, bool udp,
                                const dns::Response& response, bool approved) {
  const std::string type = dns::TypeName(query.question.qtype);
  if (response.rcode != dns::Rcode::kNoError) {
    dns::Rcode rcode =
        response.rcode == dns::Rcode::kNxDomain ? dns::Rcode::kNxDomain : dns::Rcode::kServFail;
    Log(pb::LOG_KIND_NAME_ANSWERED, name_text, type, {},
        absl::StrCat("upstream answered ", RcodeName(response.rcode)));
    return dns::BuildAnswer(query, rcode, {}, udp);
  }
  dns::Chain chain = dns::FollowChain(response, query.question);
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

  const std::string name = vocab::PlainName(query.question.name);
  if (uint64_t version = AddNameRoutes(name, kept, policy, approved); version != 0) {
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
                                const CompiledPolicy& policy, bool approved) {
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
      if (approved && !it->second.approved) {
        it->second.approved = true;
        added = true;
      }
    } else {
      if (name_routes_.size() >= kMaxNameRoutes) {
        auto first = std::min_element(name_routes_.begin(), name_routes_.end(),
                                      [](const auto& a, const auto& b) {
                                        return a.second.expires_unix < b.second.expires_unix;
                                      });
        name_routes_.erase(first);
      }
      it = name_routes_.insert_or_assign(key, NameRoute{address, name, expires, approved}).first;
      added = true;
    }
    rr.ttl = static_cast<uint32_t>(std::min<int64_t>(rr.ttl, it->second.expires_unix - now));
  }
  if (added) ++version_;
  return applied_version_ < version_ ? version_ : 0;
}

}  // namespace lazaret::netpolicyd
