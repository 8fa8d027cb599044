#include "services/brokerd/network_approval_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/brokerd/test_requests.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;
namespace na = ::lazaret::netapproval::v1;
namespace cfg = ::lazaret::config::v1;
namespace sv = ::lazaret::supervisor::v1;

using testing::kSession;

pb::Approver NetScriptApprover() {
  pb::Approver a;
  a.set_kind(pb::Approver::KIND_SCRIPT);
  a.set_name("ci");
  return a;
}

pb::DecideRequest AllowName(const std::string& id, pb::AllowName::Scope scope,
                            const std::string& before = "") {
  pb::DecideRequest d;
  d.set_id(id);
  *d.mutable_approver() = NetScriptApprover();
  d.mutable_allow_name()->set_scope(scope);
  d.mutable_allow_name()->set_before_sha256(before);
  return d;
}

pb::DecideRequest DenyId(const std::string& id) {
  pb::DecideRequest d;
  d.set_id(id);
  *d.mutable_approver() = NetScriptApprover();
  d.mutable_deny()->set_reason("no");
  return d;
}

pb::PendingRequest NetworkRequest(const std::string& request_id, bool profile_offered = false) {
  pb::PendingRequest r;
  r.set_request_id(request_id);
  r.set_session_id(kSession);
  r.set_profile("netask");
  r.mutable_network()->set_name("example.org");
  r.mutable_network()->set_name_escaped("example.org");
  if (profile_offered) r.mutable_network()->set_profile_diff("+ \"example.org\",\n");
  return r;
}

RequestBookOptions FastNetBook() {
  RequestBookOptions o;
  o.decide_wait = absl::Milliseconds(50);
  return o;
}

TEST(NetworkRequestBookTest, FirstDecisionWinsAndNothingRuns) {
  for (int round = 0; round < 10; ++round) {
    RequestBook book(FastNetBook(), nullptr, nullptr);
    absl::StatusOr<RequestHandle> handle = book.Add(NetworkRequest("net-1"));
    ASSERT_TRUE(handle.ok()) << handle.status();
    std::atomic<int> won{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 6; ++i) {
      threads.emplace_back([&, i] {
        auto r = i % 2 == 0 ? book.Decide(AllowName(handle->id(), pb::AllowName::SCOPE_SESSION))
                            : book.Decide(DenyId(handle->id()));
        if (r.ok()) ++won;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(won.load(), 1);
    absl::StatusOr<Decision> d = book.WaitForDecision(*handle, absl::Now());
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->kind == Decision::Kind::kNameAllowed || d->kind == Decision::Kind::kDenied);
    absl::StatusOr<pb::RequestState> state = book.GetById(handle->id());
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(state->phase(), pb::RequestState::PHASE_DONE) << "no RUNNING phase";
  }
}

TEST(NetworkRequestBookTest, ApproveAndEditOnANetworkRequestAreRefused) {
  RequestBook book(FastNetBook(), nullptr, nullptr);
  absl::StatusOr<RequestHandle> handle = book.Add(NetworkRequest("net-1"));
  ASSERT_TRUE(handle.ok());
  pb::DecideRequest approve;
  approve.set_id(handle->id());
  *approve.mutable_approver() = NetScriptApprover();
  approve.mutable_approve();
  auto r = book.Decide(approve);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  pb::DecideRequest edit = approve;
  edit.mutable_edit()->add_argv("true");
  r = book.Decide(edit);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  // Still pending: the right kind of decision still works.
  EXPECT_TRUE(book.Decide(AllowName(handle->id(), pb::AllowName::SCOPE_ONCE)).ok());
}

TEST(NetworkRequestBookTest, AllowNameOnACommandRequestIsRefused) {
  RequestBook book(FastNetBook(), nullptr, nullptr);
  absl::StatusOr<RequestHandle> handle = book.Add(testing::Request("cmd-1"));
  ASSERT_TRUE(handle.ok());
  auto r = book.Decide(AllowName(handle->id(), pb::AllowName::SCOPE_SESSION));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
}

TEST(NetworkRequestBookTest, ProfileScopeOnlyWhenOffered) {
  RequestBook book(FastNetBook(), nullptr, nullptr);
  absl::StatusOr<RequestHandle> handle = book.Add(NetworkRequest("net-1"));
  ASSERT_TRUE(handle.ok());
  auto r = book.Decide(AllowName(handle->id(), pb::AllowName::SCOPE_PROFILE, "abc"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  r = book.Decide(AllowName(handle->id(), pb::AllowName::SCOPE_UNSPECIFIED));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
}

// The service with a fake supervisor/configd and a scripted approver.
class NetworkApprovalServiceTest : public ::testing::Test {
 protected:
  NetworkApprovalServiceTest() : book_(FastNetBook(), nullptr, nullptr) {
    deps_.look_up = [this](const std::string& id) -> absl::StatusOr<SessionFacts> {
      if (id != kSession) return absl::NotFoundError("no such session");
      SessionFacts f;
      f.record.set_id(id);
      f.record.set_profile("netask");
      f.record.set_workspace("/home/u/w");
      f.state = sv::SESSION_STATE_ATTACHED;
      return f;
    };
    deps_.preview = [this](const SessionFacts&,
                           const std::string& name) -> absl::StatusOr<cfg::NameAllowPreview> {
      if (!offer_profile_) return absl::FailedPreconditionError("the file has an odd shape");
      cfg::NameAllowPreview p;
      p.set_file("/home/u/.config/lazaret/config.toml");
      p.set_diff(absl::StrCat("+  \"", name, "\",\n"));
      p.set_before_sha256("sha-before");
      return p;
    };
    deps_.apply = [this](const SessionFacts&, const std::string& name,
                         const std::string& before) -> absl::StatusOr<cfg::NameAllowPreview> {
      applied_.push_back(absl::StrCat(name, "@", before));
      if (file_changed_) return absl::FailedPreconditionError("the file changed");
      return cfg::NameAllowPreview();
    };
    deps_.audit = [this](const pb::AuditRecord& r) {
      audited_.push_back(r);
      return absl::OkStatus();
    };
  }

  na::AskRequest Ask(uint32_t timeout = 10) {
    na::AskRequest r;
    r.set_session_id(kSession);
    r.set_name("example.org");
    r.add_query_types("A");
    auto* a = r.add_addresses();
    a->set_address("203.0.113.7");
    a->set_allowed(true);
    r.set_timeout_seconds(timeout);
    return r;
  }

  // Asks on a thread while a scripted approver watches the session and
  // answers the first ADDED event with `decide(id)`.
  absl::StatusOr<na::AskResponse> AskAndDecide(
      const na::AskRequest& request,
      const std::function<pb::DecideRequest(const pb::PendingRequest&)>& decide) {
    std::unique_ptr<PendingWatch> watch = book_.Watch(kSession, pb::Approver::KIND_SCRIPT);
    NetworkApprovalService service(&book_, deps_);
    absl::StatusOr<na::AskResponse> out = absl::UnknownError("not run");
    std::thread asker([&] { out = service.Decide(request, nullptr); });
    pb::PendingEvent event;
    if (watch->Wait(&event, absl::Now() + absl::Seconds(5)) == PendingWatch::Next::kEvent) {
      seen_ = event.request();
      if (decide) {
        EXPECT_TRUE(book_.Decide(decide(event.request())).ok());
      }
    }
    asker.join();
    return out;
  }

  RequestBook book_;
  NetworkApprovalDeps deps_;
  bool offer_profile_ = true;
  bool file_changed_ = false;
  std::vector<std::string> applied_;
  std::vector<pb::AuditRecord> audited_;
  pb::PendingRequest seen_;
};

TEST_F(NetworkApprovalServiceTest, SessionScopeIsAnsweredAndAudited) {
  auto out = AskAndDecide(Ask(), [](const pb::PendingRequest& r) {
    return AllowName(r.id(), pb::AllowName::SCOPE_SESSION);
  });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_SESSION);
  EXPECT_EQ(out->approver().name(), "ci");
  EXPECT_EQ(seen_.network().name(), "example.org");
  EXPECT_EQ(seen_.network().addresses_size(), 1);
  EXPECT_EQ(seen_.network().profile_sha256(), "sha-before");
  ASSERT_EQ(audited_.size(), 1u);
  EXPECT_EQ(audited_[0].network_name(), "example.org");
  EXPECT_EQ(audited_[0].decision(), pb::AuditRecord::DECISION_NAME_ALLOWED);
  EXPECT_TRUE(applied_.empty());
}

TEST_F(NetworkApprovalServiceTest, ProfileScopeWritesTheFileShown) {
  auto out = AskAndDecide(Ask(), [](const pb::PendingRequest& r) {
    return AllowName(r.id(), pb::AllowName::SCOPE_PROFILE, r.network().profile_sha256());
  });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_PROFILE);
  ASSERT_EQ(applied_.size(), 1u);
  EXPECT_EQ(applied_[0], "example.org@sha-before");
}

TEST_F(NetworkApprovalServiceTest, ProfileScopeFallsBackToSessionWhenTheFileChanged) {
  file_changed_ = true;
  auto out = AskAndDecide(Ask(), [](const pb::PendingRequest& r) {
    return AllowName(r.id(), pb::AllowName::SCOPE_PROFILE, r.network().profile_sha256());
  });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_SESSION);
  EXPECT_TRUE(absl::StrContains(out->resolution(), "the profile file changed: not written"))
      << out->resolution();
}

TEST_F(NetworkApprovalServiceTest, NoPreviewNoProfileScope) {
  offer_profile_ = false;
  auto out = AskAndDecide(Ask(), [this](const pb::PendingRequest& r) {
    EXPECT_TRUE(r.network().profile_diff().empty());
    EXPECT_EQ(book_.Decide(AllowName(r.id(), pb::AllowName::SCOPE_PROFILE, "x")).status().code(),
              absl::StatusCode::kFailedPrecondition);
    return AllowName(r.id(), pb::AllowName::SCOPE_ONCE);
  });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_ONCE);
}

TEST_F(NetworkApprovalServiceTest, DenyIsDenied) {
  auto out = AskAndDecide(Ask(), [](const pb::PendingRequest& r) { return DenyId(r.id()); });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_DENIED);
  ASSERT_EQ(audited_.size(), 1u);
  EXPECT_EQ(audited_[0].decision(), pb::AuditRecord::DECISION_DENIED);
}

TEST_F(NetworkApprovalServiceTest, NobodyAnsweringExpires) {
  const absl::Time start = absl::Now();
  auto out = AskAndDecide(Ask(/*timeout=*/1), nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_EXPIRED);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(900));
  ASSERT_EQ(audited_.size(), 1u);
  EXPECT_EQ(audited_[0].decision(), pb::AuditRecord::DECISION_EXPIRED);
}

TEST_F(NetworkApprovalServiceTest, NoApproverAnswersAtOnceUnlessToldToWait) {
  NetworkApprovalService service(&book_, deps_);
  const absl::Time start = absl::Now();
  auto out = service.Decide(Ask(), nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_NO_APPROVER);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  na::AskRequest wait = Ask(/*timeout=*/1);
  wait.set_unattended_wait(true);
  out = service.Decide(wait, nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_EXPIRED);
}

TEST_F(NetworkApprovalServiceTest, AnAskerThatWentAwayEndsTheRequest) {
  std::unique_ptr<PendingWatch> watch = book_.Watch(kSession, pb::Approver::KIND_SCRIPT);
  NetworkApprovalService service(&book_, deps_);
  std::atomic<bool> gone{false};
  absl::StatusOr<na::AskResponse> out = absl::UnknownError("not run");
  const absl::Time start = absl::Now();
  std::thread asker([&] { out = service.Decide(Ask(30), [&] { return gone.load(); }); });
  pb::PendingEvent event;
  ASSERT_EQ(watch->Wait(&event, absl::Now() + absl::Seconds(5)), PendingWatch::Next::kEvent);
  gone = true;
  asker.join();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->outcome(), na::AskResponse::OUTCOME_EXPIRED);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_EQ(watch->Wait(&event, absl::Now() + absl::Seconds(1)), PendingWatch::Next::kEvent);
  EXPECT_EQ(event.kind(), pb::PendingEvent::KIND_RESOLVED);
}

TEST_F(NetworkApprovalServiceTest, UnknownSessionAndMalformedNamesAreRefused) {
  NetworkApprovalService service(&book_, deps_);
  na::AskRequest other = Ask();
  other.set_session_id("ba9876543210");
  EXPECT_EQ(service.Decide(other, nullptr).status().code(), absl::StatusCode::kNotFound);
  for (const char* bad :
       {"", "Example.org", "a..b", "a.b.", "\x1b[31m.example", "a b.org", "xn--\xc3\xa9.org"}) {
    na::AskRequest r = Ask();
    r.set_name(bad);
    EXPECT_EQ(service.Decide(r, nullptr).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  na::AskRequest r = Ask();
  r.mutable_addresses(0)->set_rule_text("deny\x1b[2J");
  EXPECT_EQ(service.Decide(r, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  r = Ask();
  r.add_query_types("TXT");
  EXPECT_EQ(service.Decide(r, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lazaret::brokerd
