#include "sidecar/policy_engine.h"

#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/status_util.h"
#include "sidecar/netlink_routes.h"
#include "sidecar/policy_rules.h"

namespace lazaret::netrouter {
namespace {

// The first difference between what was asked and what the kernel has.
std::string FirstMismatch(const PolicySet& wanted, const PolicySet& got) {
  PolicyDiff d = Diff(got, wanted);
  for (const auto& phase : d.phases) {
    for (const RouteChange& c : phase) {
      const std::string route =
          absl::StrCat(ActionName(c.route.action), " ", c.route.prefix.ToString());
      switch (c.kind) {
        case RouteChange::Kind::kAdd:
          return absl::StrCat(route, " is missing");
        case RouteChange::Kind::kReplace:
          return absl::StrCat(route, " has the other action");
        case RouteChange::Kind::kRemove:
          return absl::StrCat(route, " is there but was not asked for");
      }
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicyEngine>> PolicyEngine::Create() {
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<RtnlSocket> rtnl, RtnlSocket::Open());
  LAZ_ASSIGN_OR_RETURN(NlSockPtr libnl, ConnectLibnl());
  return std::unique_ptr<PolicyEngine>(new PolicyEngine(std::move(rtnl), std::move(libnl)));
}

absl::Status PolicyEngine::InstallClosedTable() {
  std::lock_guard<std::mutex> lock(mu_);
  // The table first: when the pref-100 rule appears it already refuses all.
  absl::StatusOr<PolicyDiff> diff = ApplyLocked(ClosedPolicy());
  if (!diff.ok()) return diff.status();
  return InstallPolicyRules(libnl_.get());
}

absl::StatusOr<PolicyDiff> PolicyEngine::ApplyLocked(const PolicySet& routes) {
  if (!installed_known_) {
    absl::StatusOr<PolicySet> now = ReadPolicyTable(*rtnl_);
    // A table that is not a policy (no defaults yet, at startup) is rebuilt
    // from nothing: NEWROUTE with NLM_F_REPLACE overwrites what is there.
    installed_ = now.ok() ? *std::move(now) : PolicySet{};
    installed_known_ = true;
  }
  PolicyDiff total;
  int request = 0;
  // A second pass only when the read-back shows that the kernel's table was
  // not what the router last read (changed behind its back): the same
  // ordered phases, from what is really there.
  for (int pass = 0; pass < 2; ++pass) {
    PolicyDiff diff = Diff(installed_, routes);
    total.added += diff.added;
    total.replaced += diff.replaced;
    total.removed += diff.removed;
    for (int phase = 0; phase < PolicyDiff::kPhases; ++phase) {
      if (diff.phases[phase].empty()) continue;
      NlBatch batch;
      for (const RouteChange& c : diff.phases[phase]) {
        ++request;
        AddRouteChange(batch, c, request == fail_request_);
      }
      // What is in the kernel is unknown from here until the read-back.
      installed_known_ = false;
      if (absl::Status s = rtnl_->Run(batch); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat("phase ", phase + 1, " of ", PolicyDiff::kPhases,
                                                   ": ", s.message()));
      }
    }
    LAZ_ASSIGN_OR_RETURN(PolicySet back, ReadPolicyTable(*rtnl_));
    installed_ = std::move(back);
    installed_known_ = true;
    if (installed_ == routes) return total;
    if (pass == 0) {
      LAZ_LOG_WARNING << "the policy table was not as last read back ("
                      << FirstMismatch(routes, installed_) << "); correcting it";
    }
  }
  return absl::InternalError(absl::StrCat("the policy table read back differs from the policy: ",
                                          FirstMismatch(routes, installed_)));
}

absl::Status PolicyEngine::FailClosedLocked(const absl::Status& cause) {
  fail_request_ = 0;
  failed_closed_ = true;
  last_error_ = std::string(cause.message());
  absl::Status closed = SetFailClosed(libnl_.get(), true);
  LAZ_LOG_ERROR << "applying the policy failed, namespace closed (pref " << kFailClosedRulePriority
                << " prohibit-all): " << cause.message()
                << (closed.ok() ? "" : absl::StrCat("; closing failed too: ", closed.message()));
  if (!closed.ok()) {
    return absl::InternalError(absl::StrCat(cause.message(),
                                            "; and the fail-closed rule could "
                                            "not be added: ",
                                            closed.message()));
  }
  return cause;
}

absl::StatusOr<ApplyResult> PolicyEngine::Apply(uint64_t generation, const PolicySet& routes) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string wanted_digest = Digest(routes);
  LAZ_ASSIGN_OR_RETURN(GenerationVerdict verdict,
                       CheckGeneration(generation_, digest_, generation, wanted_digest));
  // While failed closed, the applied generation is re-applied on request
  // (the kernel may not hold it any more); otherwise it is a no-op.
  if (verdict == GenerationVerdict::kAlreadyApplied && !failed_closed_) {
    return ApplyResult{.generation = generation_,
                       .digest = digest_,
                       .routes = static_cast<uint32_t>(installed_.size())};
  }
  absl::StatusOr<PolicyDiff> diff = ApplyLocked(routes);
  fail_request_ = 0;
  if (!diff.ok()) {
    return FailClosedLocked(absl::Status(
        diff.status().code(),
        absl::StrCat("applying generation ", generation, ": ", diff.status().message())));
  }
  if (failed_closed_) {
    // Only now that the table reads back as asked may the namespace open.
    if (absl::Status s = SetFailClosed(libnl_.get(), false); !s.ok()) {
      return FailClosedLocked(s);
    }
    failed_closed_ = false;
    LAZ_LOG_INFO << "generation " << generation << " applied; fail-closed rule removed";
  }
  generation_ = generation;
  digest_ = Digest(installed_);
  last_error_.clear();
  return ApplyResult{.generation = generation_,
                     .digest = digest_,
                     .routes = static_cast<uint32_t>(installed_.size()),
                     .added = diff->added,
                     .replaced = diff->replaced,
                     .removed = diff->removed};
}

absl::StatusOr<PolicySnapshot> PolicyEngine::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  LAZ_ASSIGN_OR_RETURN(PolicySet routes, ReadPolicyTable(*rtnl_));
  PolicySnapshot s;
  s.generation = generation_;
  s.digest = Digest(routes);
  s.routes = std::move(routes);
  s.failed_closed = failed_closed_;
  s.last_error = last_error_;
  return s;
}

PolicySet PolicyEngine::Installed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return installed_;
}

void PolicyEngine::FailRequestForTesting(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_request_ = n;
}

}  // namespace lazaret::netrouter
