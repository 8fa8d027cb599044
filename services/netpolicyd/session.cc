#include "services/netpolicyd/session.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "services/common/grpc_deadline.h"
#include "services/common/log.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/vocab/domain_pattern.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rt = ::lazaret::netrouter::v1;

const char* KindName(pb::RuleKind kind) {
  switch (kind) {
    case pb::RULE_KIND_CONFIG:
      return "configuration";
    case pb::RULE_KIND_DERIVED:
      return "derived";
    case pb::RULE_KIND_HOST_ADDRESS:
      return "host address";
    case pb::RULE_KIND_HOST_NETWORK:
      return "host network";
    case pb::RULE_KIND_GATEWAY:
      return "gateway";
    case pb::RULE_KIND_ALWAYS:
      return "always";
    case pb::RULE_KIND_DEFAULT:
      return "default";
    case pb::RULE_KIND_NAME:
      return "name";
    case pb::RULE_KIND_LIVE:
      return "live";
    default:
      return "unknown";
  }
}

}  // namespace

std::string DescribeRule(const pb::Rule& rule) {
  const pb::RuleSource& s = rule.source();
  std::string where = KindName(s.kind());
  if (!s.file().empty()) absl::StrAppend(&where, ": ", s.file(), ":", s.line());
  if (!s.key_path().empty()) absl::StrAppend(&where, " ", s.key_path());
  if (!s.detail().empty()) absl::StrAppend(&where, s.file().empty() ? ": " : ", ", s.detail());
  return absl::StrCat(rule.action() == pb::RULE_ACTION_ALLOW ? "allow " : "deny ",
                      rule.destination().prefix(), " (", where, ")");
}

Session::Session(std::string id, std::shared_ptr<grpc::ChannelInterface> router,
                 SessionOptions options)
    : id_(std::move(id)),
      options_([&] {
        if (!options.now_unix) options.now_unix = [] { return absl::ToUnixSeconds(absl::Now()); };
        return options;
      }()),
      router_(rt::NetRouterService::NewStub(std::move(router))),
      log_(id_, options_.log) {}

Session::Snapshot Session::TakeSnapshot() {
  Snapshot snap;
  snap.version = version_;
  snap.input.network = inputs_.network;
  if (inputs_.host != nullptr) {
    snap.input.host = *inputs_.host;
  } else {
    snap.input.host_unknown = true;
  }
  snap.input.namespace_info = inputs_.namespace_info;
  snap.input.live_rules = live_rules_;
  snap.input.live_names = live_names_;
  for (const auto& [key, route] : name_routes_) snap.input.name_routes.push_back(route);
  snap.input.now_unix = Now();
  return snap;
}

std::shared_ptr<const CompiledPolicy> Session::Applied() const {
  std::lock_guard<std::mutex> lock(mu_);
  return applied_;
}

std::shared_ptr<Resolver> Session::CurrentResolver() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resolver_;
}

void Session::Log(pb::LogKind kind, const std::string& name, const std::string& query_type,
                  std::vector<std::string> addresses, const std::string& detail) {
  pb::LogEntry entry;
  entry.set_kind(kind);
  entry.set_name(name);
  entry.set_query_type(query_type);
  for (auto& a : addresses) entry.add_addresses(std::move(a));
  entry.set_detail(detail);
  Log(std::move(entry));
}

void Session::Log(pb::LogEntry entry) { log_.Append(std::move(entry)); }

absl::StatusOr<pb::PolicyApplied> Session::Apply(uint64_t min_version, bool force) {
  std::lock_guard<std::mutex> apply_lock(apply_mu_);
  Snapshot snap;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!configured_) return absl::FailedPreconditionError("the session is not attached");
    if (!force && applied_ != nullptr && applied_version_ >= min_version) return last_applied_;
    snap = TakeSnapshot();
    generation = generation_;
  }
  if (generation == 0) {
    // A restarted netpolicyd continues from what the router has applied.
    grpc::ClientContext ctx;
    SetDeadline(&ctx, options_.router_timeout);
    rt::GetPolicyResponse installed;
    grpc::Status st = router_->GetPolicy(&ctx, rt::GetPolicyRequest(), &installed);
    if (!st.ok()) {
      return absl::UnavailableError(
          absl::StrCat("the session's router: GetPolicy: ", st.error_message()));
    }
    generation = installed.generation();
  }
  ++generation;
  LAZ_ASSIGN_OR_RETURN(CompiledPolicy compiled, Compile(snap.input));

  rt::ApplyPolicyRequest req;
  req.set_generation(generation);
  for (const auto& route : compiled.routes()) *req.add_routes() = route;
  rt::ApplyPolicyResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options_.router_timeout);
  grpc::Status st = router_->ApplyPolicy(&ctx, req, &resp);
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Never reused; a refused generation makes the next apply ask again.
    generation_ = st.error_code() == grpc::StatusCode::FAILED_PRECONDITION ? 0 : generation;
  }
  if (!st.ok()) {
    LAZ_LOG_ERROR << "session " << id_ << ": ApplyPolicy generation " << generation
                  << " failed: " << st.error_message();
    absl::Status s = FromGrpcStatus(st);
    return absl::Status(s.code(), absl::StrCat("the session's router refused the policy (it "
                                               "stays closed): ",
                                               s.message()));
  }
  if (resp.digest() != compiled.digest() || resp.generation() != generation) {
    return absl::InternalError(absl::StrCat(
        "the session's router read back another table than was sent (generation ",
        resp.generation(), ", digest ", resp.digest(), ", expected ", compiled.digest(), ")"));
  }
  pb::PolicyApplied applied;
  applied.mutable_session()->set_id(id_);
  applied.set_generation(generation);
  applied.set_digest(resp.digest());
  applied.set_routes(resp.routes());
  {
    std::lock_guard<std::mutex> lock(mu_);
    applied_ = std::make_shared<const CompiledPolicy>(std::move(compiled));
    applied_version_ = snap.version;
    last_applied_ = applied;
  }
  Log(pb::LOG_KIND_POLICY_APPLIED, "", "", {},
      absl::StrCat("generation ", generation, ": ", resp.routes(), " routes (", resp.added(),
                   " added, ", resp.replaced(), " replaced, ", resp.removed(), " removed)"));
  return applied;
}

absl::StatusOr<pb::PolicyApplied> Session::Configure(SessionInputs inputs) {
  uint64_t version;
  {
    std::lock_guard<std::mutex> lock(mu_);
    resolver_ = std::make_shared<Resolver>(inputs.upstreams, options_.resolver);
    inputs_ = std::move(inputs);
    configured_ = true;
    version = ++version_;
  }
  return Apply(version, /*force=*/true);
}

absl::StatusOr<pb::PolicyApplied> Session::Change(const pb::ChangeSessionRequest& request) {
  if (request.action() != pb::RULE_ACTION_ALLOW && request.action() != pb::RULE_ACTION_DENY) {
    return absl::InvalidArgumentError("a live change is an allow or a deny");
  }
  const int64_t now = Now();
  pb::RuleSource source;
  source.set_kind(pb::RULE_KIND_LIVE);
  if (request.duration_seconds() > 0) {
    if (request.duration_seconds() > 10ull * 365 * 86400) {
      return absl::InvalidArgumentError("a live change lasts at most ten years");
    }
    source.set_expires_unix(now + static_cast<int64_t>(request.duration_seconds()));
  }
  const char* verb = request.action() == pb::RULE_ACTION_ALLOW ? "allow" : "deny";
  uint64_t version;
  switch (request.target_case()) {
    case pb::ChangeSessionRequest::kCidr: {
      LAZ_ASSIGN_OR_RETURN(IpPrefix prefix, IpPrefix::Parse(request.cidr().prefix()));
      source.set_detail(absl::StrCat("lazaret net ", verb, " ", prefix.ToString()));
      std::lock_guard<std::mutex> lock(mu_);
      std::erase_if(live_rules_, [&](const pb::Rule& r) {
        return r.destination().prefix() == prefix.ToString();
      });
      pb::Rule& rule = live_rules_.emplace_back();
      rule.mutable_destination()->set_prefix(prefix.ToString());
      rule.set_action(request.action());
      *rule.mutable_source() = source;
      version = ++version_;
      break;
    }
    case pb::ChangeSessionRequest::kName: {
      LAZ_ASSIGN_OR_RETURN(std::string pattern, vocab::NormalizeDnsPattern(request.name()));
      source.set_detail(absl::StrCat("lazaret net ", verb, " ", pattern));
      std::lock_guard<std::mutex> lock(mu_);
      std::erase_if(live_names_, [&](const pb::NameRule& r) { return r.pattern() == pattern; });
      pb::NameRule& rule = live_names_.emplace_back();
      rule.set_pattern(pattern);
      rule.set_action(request.action());
      *rule.mutable_source() = source;
      if (request.action() == pb::RULE_ACTION_DENY) {
        std::erase_if(name_routes_, [&](const auto& entry) {
          return vocab::DomainCovers(pattern, entry.first.second);
        });
      }
      version = ++version_;
      break;
    }
    default:
      return absl::InvalidArgumentError("a live change names a CIDR or a name");
  }
  return Apply(version, /*force=*/false);
}

absl::Status Session::ApplyIfExpired() {
  uint64_t version;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (applied_ == nullptr) return absl::OkStatus();
    const int64_t next = applied_->next_expiry_unix();
    const int64_t now = Now();
    if (next == 0 || next > now) return absl::OkStatus();
    auto expired = [now](int64_t expires) { return expires != 0 && expires <= now; };
    std::erase_if(live_rules_,
                  [&](const pb::Rule& r) { return expired(r.source().expires_unix()); });
    std::erase_if(live_names_,
                  [&](const pb::NameRule& r) { return expired(r.source().expires_unix()); });
    std::erase_if(name_routes_, [&](const auto& e) { return expired(e.second.expires_unix); });
    version = ++version_;
  }
  return Apply(version, /*force=*/false).status();
}

absl::Status Session::SetHostNetworks(std::shared_ptr<const HostNetworks> host,
                                      uint64_t host_version) {
  uint64_t version;
  pb::LogEntry entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!configured_) return absl::OkStatus();  // Configure brings its own
    if (host_version != 0 && host_version < inputs_.host_version) return absl::OkStatus();
    if (host_version != 0) inputs_.host_version = host_version;
    const bool same = inputs_.host == host ||
                      (host != nullptr && inputs_.host != nullptr && *inputs_.host == *host);
    if (same) return absl::OkStatus();
    if (host == nullptr) {
      entry.set_kind(pb::LOG_KIND_HOST_NETWORKS_UNKNOWN);
      entry.set_detail("the host's addresses and routes cannot be read: every allow withdrawn");
    } else {
      entry.set_kind(pb::LOG_KIND_HOST_NETWORKS_CHANGED);
      entry.set_detail(absl::StrCat(host->addresses.size(), " host addresses, ",
                                    host->on_link.size(), " host networks denied"));
    }
    inputs_.host = std::move(host);
    version = ++version_;
  }
  Log(std::move(entry));
  return Apply(version, /*force=*/false).status();
}

absl::StatusOr<pb::SessionPolicy> Session::Show() {
  std::shared_ptr<const CompiledPolicy> policy = Applied();
  if (policy == nullptr) return absl::FailedPreconditionError("no policy applied yet");
  pb::SessionPolicy out;
  out.mutable_session()->set_id(id_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.set_profile(inputs_.info.record().profile());
    out.set_generation(last_applied_.generation());
    out.set_digest(last_applied_.digest());
    if (resolver_ != nullptr) {
      for (const auto& u : resolver_->upstreams()) out.add_dns_upstream(u.text);
    }
  }
  for (const auto& rule : policy->rules()) *out.add_rules() = rule;
  for (const auto& name : policy->names()) *out.add_names() = name;
  out.set_names_unrestricted(policy->names_unrestricted());
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.set_egress(inputs_.network.egress());
    if (inputs_.host != nullptr) {
      for (const auto& skipped : inputs_.host->skipped) {
        pb::HostRoute* route = out.add_skipped_host_routes();
        route->mutable_cidr()->set_prefix(skipped.prefix.ToString());
        route->set_interface(skipped.interface);
        route->set_reason(skipped.reason);
      }
    }
  }
  grpc::ClientContext ctx;
  SetDeadline(&ctx, std::chrono::milliseconds(5000));
  rt::GetPolicyResponse installed;
  if (router_->GetPolicy(&ctx, rt::GetPolicyRequest(), &installed).ok()) {
    out.set_router_reachable(true);
    for (const auto& route : installed.routes()) *out.add_installed() = route;
  }
  return out;
}

pb::SessionSummary Session::Summary() {
  pb::SessionSummary out;
  out.mutable_session()->set_id(id_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.set_profile(inputs_.info.record().profile());
    out.set_generation(last_applied_.generation());
    out.set_routes(last_applied_.routes());
  }
  grpc::ClientContext ctx;
  SetDeadline(&ctx, std::chrono::milliseconds(1000));
  rt::GetPolicyResponse installed;
  out.set_router_reachable(router_->GetPolicy(&ctx, rt::GetPolicyRequest(), &installed).ok());
  return out;
}

std::vector<std::string> Session::Intercepted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inputs_.intercepted;
}

}  // namespace lazaret::netpolicyd
