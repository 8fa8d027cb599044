#include "services/netpolicyd/held_names.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace na = ::lazaret::netapproval::v1;
using namespace std::chrono_literals;

// What one query got back.
struct Outcome {
  std::mutex mu;
  std::vector<uint32_t> holds;
  std::string answer;
  bool answered = false;
};

class FakeResponder : public DnsResponder {
 public:
  explicit FakeResponder(std::shared_ptr<Outcome> out) : out_(std::move(out)) {}
  void Answer(const std::string& message) override {
    std::lock_guard<std::mutex> lock(out_->mu);
    out_->answer = message;
    out_->answered = true;
  }
  void Hold(uint32_t ms) override {
    std::lock_guard<std::mutex> lock(out_->mu);
    out_->holds.push_back(ms);
  }

 private:
  std::shared_ptr<Outcome> out_;
};

class FakeHost : public HeldNamesHost {
 public:
  ResolvedName Resolve(const dns::Question&) override {
    ++resolves;
    ResolvedName r;
    for (const auto& [address, allowed] : addresses) {
      auto& a = r.addresses.emplace_back();
      a.set_address(address);
      a.set_allowed(allowed);
      if (!allowed) a.set_rule_text("deny 10.0.0.0/8 (always)");
    }
    return r;
  }
  std::string AnswerFrom(const dns::Query& query, bool udp, const ResolvedName&) override {
    return dns::BuildAnswer(query, dns::Rcode::kNoError, {}, udp) + "allowed";
  }
  absl::Status AllowName(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu);
    allowed.push_back(name);
    return absl::OkStatus();
  }
  absl::Status DenyName(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu);
    denied.push_back(name);
    return absl::OkStatus();
  }
  void Log(pb::LogEntry entry) override {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(absl::StrCat(pb::LogKind_Name(entry.kind()), " ", entry.name(), ": ",
                               entry.detail()));
    entries.push_back(std::move(entry));
  }
  std::vector<pb::LogEntry> Entries() {
    std::lock_guard<std::mutex> lock(mu);
    return entries;
  }
  std::string Log() {
    std::lock_guard<std::mutex> lock(mu);
    return absl::StrJoin(log, "\n");
  }

  std::atomic<int> resolves{0};
  std::vector<std::pair<std::string, bool>> addresses = {{"203.0.113.7", true}};
  std::mutex mu;
  std::vector<std::string> allowed, denied, log;
  std::vector<pb::LogEntry> entries;
};

// brokerd as a test: each Ask waits until the test decides it (or the call
// is cancelled).
class FakeApprovals : public ApprovalClient {
 public:
  absl::StatusOr<na::AskResponse> Ask(const na::AskRequest& request,
                                      std::chrono::system_clock::time_point,
                                      AskCall& call) override {
    std::unique_lock<std::mutex> lock(mu_);
    asked_.push_back(request);
    cv_.notify_all();
    if (fail_) return absl::UnavailableError("brokerd is not running");
    bool cancelled = false;
    lock.unlock();
    call.SetOnCancel([&] {
      std::lock_guard<std::mutex> l(mu_);
      cancelled = true;
      cv_.notify_all();
    });
    lock.lock();
    cv_.wait(lock, [&] { return cancelled || !decisions_.empty(); });
    lock.unlock();
    call.ClearOnCancel();
    lock.lock();
    if (cancelled) return absl::CancelledError("cancelled");
    na::AskResponse r;
    r.set_outcome(decisions_.front());
    r.mutable_approver()->set_name("lazaret approve");
    r.mutable_approver()->set_tty("/dev/pts/7");
    decisions_.pop_front();
    return r;
  }
  void Decide(na::AskResponse::Outcome outcome) {
    std::lock_guard<std::mutex> lock(mu_);
    decisions_.push_back(outcome);
    cv_.notify_all();
  }
  // Waits until `n` asks arrived.
  bool WaitAsked(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 5s, [&] { return asked_.size() >= n; });
  }
  size_t asked() {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_.size();
  }
  na::AskRequest last() {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_.back();
  }
  void Fail() { fail_ = true; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<na::AskRequest> asked_;
  std::deque<na::AskResponse::Outcome> decisions_;
  std::atomic<bool> fail_{false};
};

dns::Query QueryFor(const std::string& name, uint16_t type, uint16_t id = 7) {
  dns::Query q;
  q.id = id;
  q.recursion_desired = true;
  q.question.name = absl::StrSplit(name, '.');
  q.question.qtype = type;
  q.question.qclass = dns::kClassIn;
  return q;
}

bool IsRefused(const std::string& answer) {
  return answer.size() >= 12 && (answer[3] & 0x0f) == static_cast<int>(dns::Rcode::kRefused);
}

class HeldNamesTest : public ::testing::Test {
 protected:
  HeldNamesTest() {
    approvals_ = std::make_shared<FakeApprovals>();
    options_.now = [this] { return now_; };
  }
  void Make() { held_ = std::make_unique<HeldNames>("0123456789ab", &host_, approvals_, options_); }

  std::shared_ptr<Outcome> Ask(const std::string& name, uint16_t type = dns::kTypeA,
                               AskSettings settings = {}) {
    auto out = std::make_shared<Outcome>();
    held_->Hold(name, QueryFor(name, type), true, std::make_unique<FakeResponder>(out), settings);
    return out;
  }

  FakeHost host_;
  std::shared_ptr<FakeApprovals> approvals_;
  HeldNamesOptions options_;
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::time_point() + 1000s;
  std::unique_ptr<HeldNames> held_;
};

TEST_F(HeldNamesTest, RetransmitsAndBothTypesJoinOnePendingName) {
  Make();
  auto a1 = Ask("pkg.example.org", dns::kTypeA);
  ASSERT_TRUE(approvals_->WaitAsked(1));
  auto a2 = Ask("pkg.example.org", dns::kTypeA);
  auto aaaa = Ask("pkg.example.org", dns::kTypeAaaa);
  EXPECT_EQ(held_->pending(), 1u);
  approvals_->Decide(na::AskResponse::OUTCOME_ONCE);
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_EQ(approvals_->asked(), 1u);
  EXPECT_EQ(host_.resolves.load(), 1) << "the upstream is asked once per name";
  for (const auto& out : {a1, a2, aaaa}) {
    EXPECT_TRUE(out->answered);
    EXPECT_TRUE(absl::EndsWith(out->answer, "allowed"));
    ASSERT_FALSE(out->holds.empty()) << "every waiter is held at the router while asking";
    EXPECT_EQ(out->holds[0], 65000u) << "ask timeout 60 s plus the slack";
  }
  EXPECT_EQ(approvals_->last().name(), "pkg.example.org");
  EXPECT_EQ(approvals_->last().addresses(0).address(), "203.0.113.7");
}

TEST_F(HeldNamesTest, OnceAnswersTheWaitersAndTheNextQueryAsksAgain) {
  Make();
  auto first = Ask("once.example");
  ASSERT_TRUE(approvals_->WaitAsked(1));
  EXPECT_FALSE(first->answered) << "nothing before the decision";
  approvals_->Decide(na::AskResponse::OUTCOME_ONCE);
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(absl::EndsWith(first->answer, "allowed"));
  EXPECT_TRUE(host_.allowed.empty()) << "once adds no rule";
  auto second = Ask("once.example");
  ASSERT_TRUE(approvals_->WaitAsked(2));
  approvals_->Decide(na::AskResponse::OUTCOME_EXPIRED);
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(IsRefused(second->answer));
}

TEST_F(HeldNamesTest, SessionAndProfileAddALiveAllow) {
  Make();
  auto out = Ask("session.example");
  ASSERT_TRUE(approvals_->WaitAsked(1));
  approvals_->Decide(na::AskResponse::OUTCOME_SESSION);
  ASSERT_TRUE(held_->WaitIdle(5s));
  auto profile = Ask("profile.example");
  ASSERT_TRUE(approvals_->WaitAsked(2));
  approvals_->Decide(na::AskResponse::OUTCOME_PROFILE);
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(absl::EndsWith(out->answer, "allowed"));
  EXPECT_TRUE(absl::EndsWith(profile->answer, "allowed"));
  EXPECT_EQ(host_.allowed, (std::vector<std::string>{"session.example", "profile.example"}));
  EXPECT_TRUE(absl::StrContains(host_.Log(), "LOG_KIND_NAME_DECIDED session.example: allowed"))
      << host_.Log();
  // The decision and who made it are fields of their own, not only text.
  std::vector<std::string> decisions;
  for (const pb::LogEntry& e : host_.Entries()) {
    if (e.kind() != pb::LOG_KIND_NAME_DECIDED) continue;
    decisions.push_back(e.decision());
    EXPECT_EQ(e.approver(), "lazaret approve on /dev/pts/7");
  }
  EXPECT_EQ(decisions, (std::vector<std::string>{"session", "profile"}));
}

TEST_F(HeldNamesTest, DenyRefusesAndIsRememberedForTheSession) {
  Make();
  auto out = Ask("deny.example");
  ASSERT_TRUE(approvals_->WaitAsked(1));
  approvals_->Decide(na::AskResponse::OUTCOME_DENIED);
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(IsRefused(out->answer));
  EXPECT_EQ(host_.denied, std::vector<std::string>{"deny.example"});
  auto again = Ask("deny.example");
  EXPECT_TRUE(IsRefused(again->answer)) << "refused at once";
  EXPECT_EQ(approvals_->asked(), 1u);
}

TEST_F(HeldNamesTest, TimeoutAndNoApproverAndUnknownOutcomesRefuse) {
  Make();
  for (auto outcome :
       {na::AskResponse::OUTCOME_EXPIRED, na::AskResponse::OUTCOME_NO_APPROVER,
        na::AskResponse::OUTCOME_SESSION_ENDED, na::AskResponse::OUTCOME_UNSPECIFIED}) {
    const std::string name = absl::StrCat("n", static_cast<int>(outcome), ".example");
    auto out = Ask(name, dns::kTypeA, AskSettings{.timeout_seconds = 5});
    approvals_->Decide(outcome);
    ASSERT_TRUE(held_->WaitIdle(5s));
    EXPECT_TRUE(IsRefused(out->answer)) << name;
    EXPECT_EQ(approvals_->last().timeout_seconds(), 5u);
  }
  EXPECT_TRUE(host_.allowed.empty());
  EXPECT_TRUE(absl::StrContains(host_.Log(), "no approver attached: refused")) << host_.Log();
  std::vector<std::string> decisions;
  for (const pb::LogEntry& e : host_.Entries()) {
    if (e.kind() == pb::LOG_KIND_NAME_DECIDED) decisions.push_back(e.decision());
  }
  EXPECT_EQ(decisions,
            (std::vector<std::string>{"expired", "no-approver", "session-ended", "error"}));
}

TEST_F(HeldNamesTest, ARefusalIsNotAskedAgainForAMoment) {
  Make();
  auto out = Ask("retry.example");
  approvals_->Decide(na::AskResponse::OUTCOME_NO_APPROVER);
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(IsRefused(out->answer));
  // glibc's next try, at once: refused without a second prompt.
  EXPECT_TRUE(IsRefused(Ask("retry.example")->answer));
  EXPECT_EQ(approvals_->asked(), 1u);
  now_ += options_.recent_refusal;
  auto later = Ask("retry.example");
  ASSERT_TRUE(approvals_->WaitAsked(2)) << "asked again once the moment passed";
  approvals_->Decide(na::AskResponse::OUTCOME_ONCE);
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(absl::EndsWith(later->answer, "allowed"));
}

TEST_F(HeldNamesTest, AllAddressesRefusedRefusesWithoutAsking) {
  host_.addresses = {{"10.1.2.3", false}, {"fd00::5", false}};
  Make();
  auto out = Ask("internal.example");
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(IsRefused(out->answer));
  EXPECT_TRUE(out->holds.empty());
  EXPECT_EQ(approvals_->asked(), 0u);
  EXPECT_TRUE(absl::StrContains(host_.Log(), "every address stays refused")) << host_.Log();
  host_.addresses.clear();
  auto none = Ask("nxdomain.example");
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(IsRefused(none->answer));
  EXPECT_EQ(approvals_->asked(), 0u);
}

TEST_F(HeldNamesTest, PendingCapAndRateLimit) {
  options_.burst = 10;
  options_.max_pending = 8;
  Make();
  std::vector<std::shared_ptr<Outcome>> outs;
  for (int i = 0; i < 9; ++i) outs.push_back(Ask(absl::StrCat("p", i, ".example")));
  ASSERT_TRUE(approvals_->WaitAsked(8));
  EXPECT_TRUE(IsRefused(outs[8]->answer)) << "the 9th pending name";
  EXPECT_TRUE(absl::StrContains(host_.Log(), "too many names wait")) << host_.Log();
  for (int i = 0; i < 8; ++i) approvals_->Decide(na::AskResponse::OUTCOME_DENIED);
  ASSERT_TRUE(held_->WaitIdle(5s));
  // Eight tokens spent (the refused name took none): two left, then none.
  Ask("q0.example");
  Ask("q1.example");
  ASSERT_TRUE(approvals_->WaitAsked(10));
  auto limited = Ask("q2.example");
  EXPECT_TRUE(IsRefused(limited->answer));
  EXPECT_TRUE(absl::StrContains(host_.Log(), "rate limit")) << host_.Log();
  now_ += 1s;
  Ask("q3.example");
  ASSERT_TRUE(approvals_->WaitAsked(11)) << "a second later, one more name";
  for (int i = 0; i < 3; ++i) approvals_->Decide(na::AskResponse::OUTCOME_DENIED);
  ASSERT_TRUE(held_->WaitIdle(5s));
}

TEST_F(HeldNamesTest, BrokerDownRefuses) {
  approvals_->Fail();
  Make();
  auto out = Ask("down.example");
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(IsRefused(out->answer));
  EXPECT_TRUE(host_.allowed.empty());
  EXPECT_TRUE(absl::StrContains(host_.Log(), "brokerd is not running")) << host_.Log();
}

TEST_F(HeldNamesTest, NoApprovalClientRefuses) {
  held_ = std::make_unique<HeldNames>("0123456789ab", &host_, nullptr, options_);
  auto out = Ask("nobody.example");
  ASSERT_TRUE(held_->WaitIdle(5s));
  EXPECT_TRUE(IsRefused(out->answer));
}

TEST_F(HeldNamesTest, StopCancelsTheAskAndRefusesItsWaiters) {
  Make();
  auto out = Ask("stop.example");
  ASSERT_TRUE(approvals_->WaitAsked(1));
  held_->Stop();
  EXPECT_TRUE(IsRefused(out->answer));
  EXPECT_TRUE(IsRefused(Ask("after.example")->answer));
  EXPECT_EQ(approvals_->asked(), 1u);
}

TEST_F(HeldNamesTest, HoldIsCappedAtMaxHold) {
  options_.max_hold = 10s;
  Make();
  auto out = Ask("cap.example", dns::kTypeA, AskSettings{.timeout_seconds = 300});
  ASSERT_TRUE(approvals_->WaitAsked(1));
  approvals_->Decide(na::AskResponse::OUTCOME_ONCE);
  ASSERT_TRUE(held_->WaitIdle(5s));
  ASSERT_FALSE(out->holds.empty());
  EXPECT_EQ(out->holds[0], 10000u);
}

}  // namespace
}  // namespace lazaret::netpolicyd
