#include "services/brokerd/pending.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/brokerd/test_requests.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

using testing::kOther;
using testing::kSession;
using testing::Request;

pb::Approver Who(const std::string& name, pb::Approver::Kind kind = pb::Approver::KIND_SCRIPT) {
  pb::Approver a;
  a.set_kind(kind);
  a.set_name(name);
  return a;
}

pb::DecideRequest Approve(const std::string& id, const std::string& who = "ci") {
  pb::DecideRequest d;
  d.set_request_id(id);
  *d.mutable_approver() = Who(who);
  d.mutable_approve();
  return d;
}

pb::DecideRequest Deny(const std::string& id, const std::string& reason) {
  pb::DecideRequest d;
  d.set_request_id(id);
  *d.mutable_approver() = Who("reviewer", pb::Approver::KIND_TERMINAL);
  d.mutable_deny()->set_reason(reason);
  return d;
}

absl::StatusOr<EditedCommand> AcceptEdit(const pb::Edit& edit, const pb::PendingRequest&) {
  if (edit.argv_size() == 0) return absl::InvalidArgumentError("argv[0] not found");
  EditedCommand c;
  c.argv.assign(edit.argv().begin(), edit.argv().end());
  c.binary = "/usr/bin/" + c.argv[0];
  // A real check where argv[0] is on the broker's PATH: the book must carry
  // what it produced to the connection thread.
  absl::StatusOr<command::CheckedCommand> checked =
      command::CheckedCommand::Check(c.argv, "/", "");
  if (checked.ok()) {
    c.checked = std::make_shared<const command::CheckedCommand>(*std::move(checked));
  }
  return c;
}

RequestBookOptions Fast() {
  RequestBookOptions o;
  o.decide_wait = absl::Milliseconds(50);
  return o;
}

absl::Time Later() { return absl::Now() + absl::Seconds(10); }

TEST(RequestBookTest, FirstDecisionWinsAmongEightRacingApprovers) {
  for (int round = 0; round < 20; ++round) {
    RequestBook book(Fast(), AcceptEdit, nullptr);
    auto handle = book.Add(Request("race"));
    ASSERT_TRUE(handle.ok()) << handle.status();
    std::atomic<int> won{0};
    std::atomic<int> refused{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        auto r = (i % 2 == 0) ? book.Decide(Approve("race", absl::StrCat("approver-", i)))
                              : book.Decide(Deny("race", "no"));
        if (r.ok()) {
          ++won;
        } else {
          EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
          EXPECT_TRUE(absl::StrContains(r.status().message(), "by ")) << r.status();
          ++refused;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(won.load(), 1);
    EXPECT_EQ(refused.load(), 7);
    auto decision = book.WaitForDecision(*handle, Later());
    ASSERT_TRUE(decision.ok());
  }
}

TEST(RequestBookTest, DecisionIsConsumedOnce) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  auto handle = book.Add(Request("once"));
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(book.Decide(Approve("once")).ok());
  auto again = book.Decide(Approve("once", "second"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(again.status().message(), "approved by ci (script)"))
      << again.status();
  auto first = book.WaitForDecision(*handle, Later());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->kind, Decision::Kind::kApproved);
  EXPECT_EQ(first->approver.name(), "ci");
  auto second = book.WaitForDecision(*handle, Later());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  // A replayed request id never gets into the book again.
  auto replay = book.Add(Request("once"));
  EXPECT_EQ(replay.status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(RequestBookTest, UnknownRequestIsNotFound) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  EXPECT_EQ(book.Decide(Approve("nope")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(book.Get("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(RequestBookTest, UnansweredRequestExpiresAndCannotBeDecidedAfter) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  auto handle = book.Add(Request("slow"));
  ASSERT_TRUE(handle.ok());
  absl::Time start = absl::Now();
  auto decision = book.WaitForDecision(*handle, start + absl::Milliseconds(150));
  ASSERT_TRUE(decision.ok());
  EXPECT_EQ(decision->kind, Decision::Kind::kExpired);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(140));
  auto late = book.Decide(Approve("slow"));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(late.status().message(), "timed out")) << late.status();
  EXPECT_EQ(book.Get("slow")->phase(), pb::RequestState::PHASE_DONE);
  EXPECT_EQ(book.Counts(kSession).pending, 0u);
}

TEST(RequestBookTest, RequestDeadlineBoundsTheWait) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  pb::PendingRequest r = Request("dl");
  r.set_deadline_unix(absl::ToUnixSeconds(absl::Now()) + 1);
  auto handle = book.Add(r);
  ASSERT_TRUE(handle.ok());
  absl::Time start = absl::Now();
  auto decision = book.WaitForDecision(*handle, start + absl::Seconds(30));
  ASSERT_TRUE(decision.ok());
  EXPECT_EQ(decision->kind, Decision::Kind::kExpired);
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

TEST(RequestBookTest, EditErrorKeepsTheRequestPending) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  auto handle = book.Add(Request("edit"));
  ASSERT_TRUE(handle.ok());
  pb::DecideRequest bad = Approve("edit");
  bad.mutable_edit()->set_command("no argv");
  auto refused = book.Decide(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(book.Get("edit")->phase(), pb::RequestState::PHASE_PENDING);

  pb::DecideRequest good = Approve("edit");
  good.mutable_edit()->add_argv("uname");
  good.mutable_edit()->add_argv("-a");
  std::thread runner([&] {
    auto d = book.WaitForDecision(*handle, Later());
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->kind, Decision::Kind::kEdited);
    ASSERT_TRUE(d->edited.has_value());
    EXPECT_EQ(d->edited->argv, (std::vector<std::string>{"uname", "-a"}));
    ASSERT_NE(d->edited->checked, nullptr);
    EXPECT_EQ(d->edited->checked->argv(), (std::vector<std::string>{"uname", "-a"}));
    book.Started(*handle);
  });
  auto edited = book.Decide(good);
  runner.join();
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_EQ(edited->binary(), "/usr/bin/uname");
  EXPECT_EQ(book.Get("edit")->phase(), pb::RequestState::PHASE_RUNNING);
}

TEST(RequestBookTest, AbortStopsTheSessionAndResolvesItsRequests) {
  std::vector<std::string> stopped;
  RequestBook book(Fast(), AcceptEdit, [&](const std::string& id) { stopped.push_back(id); });
  auto a = book.Add(Request("a"));
  auto b = book.Add(Request("b"));
  auto other = book.Add(Request("c", kOther));
  ASSERT_TRUE(a.ok() && b.ok() && other.ok());
  pb::DecideRequest abort = Approve("a");
  abort.mutable_abort()->set_reason("exfiltration");
  ASSERT_TRUE(book.Decide(abort).ok());
  EXPECT_EQ(stopped, std::vector<std::string>{kSession});
  auto da = book.WaitForDecision(*a, Later());
  auto db = book.WaitForDecision(*b, Later());
  ASSERT_TRUE(da.ok() && db.ok());
  EXPECT_EQ(da->kind, Decision::Kind::kAborted);
  EXPECT_EQ(db->kind, Decision::Kind::kAborted);
  EXPECT_EQ(db->reason, "exfiltration");
  EXPECT_EQ(book.Get("c")->phase(), pb::RequestState::PHASE_PENDING);
  // The aborted session gets nothing more into the book.
  EXPECT_EQ(book.Add(Request("d")).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RequestBookTest, EndSessionResolvesPendingRequests) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  auto h = book.Add(Request("x"));
  ASSERT_TRUE(h.ok());
  std::thread ender([&] {
    absl::SleepFor(absl::Milliseconds(50));
    book.EndSession(kSession);
  });
  auto d = book.WaitForDecision(*h, Later());
  ender.join();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->kind, Decision::Kind::kSessionEnded);
  EXPECT_EQ(book.Add(Request("y")).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RequestBookTest, NinthPendingRequestOfASessionIsRefused) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(book.Add(Request(absl::StrCat("r", i))).ok());
  auto ninth = book.Add(Request("r8"));
  EXPECT_EQ(ninth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(book.Add(Request("o1", kOther)).ok());   // per session
  EXPECT_TRUE(book.AddRunning(Request("auto")).ok());  // not pending
  ASSERT_TRUE(book.Decide(Deny("r0", "no")).ok());
  EXPECT_TRUE(book.Add(Request("r9")).ok());
  EXPECT_EQ(book.Counts(kSession).pending, 8u);
}

TEST(RequestBookTest, CapIsAConstructorParameter) {
  RequestBookOptions o = Fast();
  o.max_pending_per_session = 2;
  RequestBook book(o, AcceptEdit, nullptr);
  ASSERT_TRUE(book.Add(Request("1")).ok());
  ASSERT_TRUE(book.Add(Request("2")).ok());
  EXPECT_EQ(book.Add(Request("3")).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(RequestBookTest, RequestIdHeldByAnotherSessionIsRefused) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  ASSERT_TRUE(book.Add(Request("same")).ok());
  EXPECT_EQ(book.Add(Request("same", kOther)).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(RequestBookTest, WatcherSeesPendingThenAddedThenResolved) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  ASSERT_TRUE(book.Add(Request("before")).ok());
  ASSERT_TRUE(book.Add(Request("elsewhere", kOther)).ok());
  auto watch = book.Watch(kSession, pb::Approver::KIND_TERMINAL);
  EXPECT_EQ(book.Counts(kSession).approvers_terminal, 1u);
  EXPECT_EQ(book.Counts(kOther).approvers_terminal, 0u);
  ASSERT_TRUE(book.Add(Request("after")).ok());
  ASSERT_TRUE(book.Decide(Deny("before", "no")).ok());
  pb::PendingEvent e;
  ASSERT_EQ(watch->Wait(&e, Later()), PendingWatch::Next::kEvent);
  EXPECT_EQ(e.kind(), pb::PendingEvent::KIND_ADDED);
  EXPECT_EQ(e.request().request_id(), "before");
  ASSERT_EQ(watch->Wait(&e, Later()), PendingWatch::Next::kEvent);
  EXPECT_EQ(e.kind(), pb::PendingEvent::KIND_ADDED);
  EXPECT_EQ(e.request().request_id(), "after");
  ASSERT_EQ(watch->Wait(&e, Later()), PendingWatch::Next::kEvent);
  EXPECT_EQ(e.kind(), pb::PendingEvent::KIND_RESOLVED);
  EXPECT_EQ(e.request().request_id(), "before");
  EXPECT_TRUE(absl::StrContains(e.resolution(), "denied by reviewer (terminal)")) << e.resolution();
  EXPECT_EQ(watch->Wait(&e, absl::Now() + absl::Milliseconds(20)), PendingWatch::Next::kTimeout);
  watch.reset();
  EXPECT_EQ(book.Counts(kSession).approvers_terminal, 0u);
}

TEST(RequestBookTest, WatcherThatDoesNotReadIsDropped) {
  RequestBookOptions o = Fast();
  o.watcher_queue = 4;
  o.max_pending_per_session = 100;
  RequestBook book(o, AcceptEdit, nullptr);
  auto slow = book.Watch("", pb::Approver::KIND_SCRIPT);
  auto fast = book.Watch("", pb::Approver::KIND_INLINE);
  pb::PendingEvent e;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(book.Add(Request(absl::StrCat("q", i))).ok());
    ASSERT_EQ(fast->Wait(&e, Later()), PendingWatch::Next::kEvent);
  }
  EXPECT_EQ(slow->Wait(&e, Later()), PendingWatch::Next::kDropped);
  SessionCounts counts = book.Counts(kSession);
  EXPECT_EQ(counts.approvers_script, 0u);
  EXPECT_EQ(counts.approvers_inline, 1u);
}

TEST(RequestBookTest, CloseEndsWatchers) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  auto watch = book.Watch("", pb::Approver::KIND_SCRIPT);
  book.Close();
  pb::PendingEvent e;
  EXPECT_EQ(watch->Wait(&e, Later()), PendingWatch::Next::kClosed);
}

TEST(RequestBookTest, OnlyTheLastFinishedRequestsAreKept) {
  RequestBookOptions o = Fast();
  o.kept_finished = 64;
  RequestBook book(o, AcceptEdit, nullptr);
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 100; ++i) {
    auto h = book.AddRunning(Request(absl::StrCat("done", i)));
    ASSERT_TRUE(h.ok());
    pb::AuditRecord record;
    record.set_request_id(h->request_id());
    record.set_ran(true);
    book.Complete(*h, record, std::string(1000, 'o'), "err");
  }
  EXPECT_EQ(book.Get("done35").status().code(), absl::StatusCode::kNotFound);
  auto kept = book.Get("done36");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->phase(), pb::RequestState::PHASE_DONE);
  EXPECT_EQ(kept->record().request_id(), "done36");
  EXPECT_EQ(kept->stdout().size(), 1000u);
  EXPECT_EQ(kept->stderr(), "err");
  // A forgotten request's id stays used in its session.
  EXPECT_EQ(book.Add(Request("done0")).status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(RequestBookTest, ApproveWaitsForTheStartThenGetShowsTheResult) {
  RequestBook book(RequestBookOptions{}, AcceptEdit, nullptr);
  auto h = book.Add(Request("run"));
  ASSERT_TRUE(h.ok());
  std::atomic<bool> started{false};
  std::thread runner([&] {
    auto d = book.WaitForDecision(*h, Later());
    ASSERT_TRUE(d.ok());
    absl::SleepFor(absl::Milliseconds(100));
    started = true;
    book.Started(*h);
    pb::AuditRecord record;
    record.set_decision(pb::AuditRecord::DECISION_APPROVED);
    record.set_exit_code(3);
    book.Complete(*h, record, "out", "");
  });
  auto r = book.Decide(Approve("run"));
  EXPECT_TRUE(started.load());
  runner.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->argv(0), "id");
  EXPECT_EQ(r->binary(), "/usr/bin/id");
  auto state = book.Get("run");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->phase(), pb::RequestState::PHASE_DONE);
  EXPECT_EQ(state->record().exit_code(), 3);
  EXPECT_EQ(state->stdout(), "out");
}

TEST(RequestBookTest, AutoApprovedRequestCannotBeDecided) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  auto h = book.AddRunning(Request("auto"));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(book.Decide(Deny("auto", "late")).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(book.Get("auto")->phase(), pb::RequestState::PHASE_RUNNING);
}

TEST(RequestBookTest, TheBookNamesEachRequestAndDecidesByThatName) {
  RequestBook book(Fast(), AcceptEdit, nullptr);
  // Whatever the caller put in PendingRequest.id is replaced.
  pb::PendingRequest planted = Request("git-status-looks-harmless");
  planted.set_id("q1");
  auto first = book.Add(planted);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = book.Add(Request("make-test", kOther));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(first->id(), second->id());
  EXPECT_TRUE(IsValidBrokerId(first->id())) << first->id();
  auto watch = book.Watch("", pb::Approver::KIND_TERMINAL);
  pb::PendingEvent e;
  ASSERT_EQ(watch->Wait(&e, Later()), PendingWatch::Next::kEvent);
  EXPECT_EQ(e.request().id(), first->id());
  EXPECT_EQ(e.request().request_id(), "git-status-looks-harmless");
  ASSERT_EQ(watch->Wait(&e, Later()), PendingWatch::Next::kEvent);
  EXPECT_EQ(e.request().id(), second->id());

  // Decided by the book's id: that request and no other.
  pb::DecideRequest deny = Deny("", "no");
  deny.set_id(second->id());
  ASSERT_TRUE(book.Decide(deny).ok());
  EXPECT_EQ(book.Get("make-test")->phase(), pb::RequestState::PHASE_DONE);
  EXPECT_EQ(book.Get("git-status-looks-harmless")->phase(), pb::RequestState::PHASE_PENDING);
  ASSERT_EQ(watch->Wait(&e, Later()), PendingWatch::Next::kEvent);
  EXPECT_EQ(e.kind(), pb::PendingEvent::KIND_RESOLVED);
  EXPECT_EQ(e.request().id(), second->id());
  EXPECT_EQ(book.GetById(second->id())->request().request_id(), "make-test");
  // The id wins over a request_id naming another request.
  pb::DecideRequest again = Approve("git-status-looks-harmless");
  again.set_id(second->id());
  EXPECT_EQ(book.Decide(again).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(book.Get("git-status-looks-harmless")->phase(), pb::RequestState::PHASE_PENDING);
  pb::DecideRequest unknown = Approve("");
  unknown.set_id("q999999");
  EXPECT_EQ(book.Decide(unknown).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(book.GetById("q999999").status().code(), absl::StatusCode::kNotFound);
  // Scripts that name the agent's id still work.
  ASSERT_TRUE(book.Decide(Deny("git-status-looks-harmless", "no")).ok());
}

TEST(RequestBookTest, BrokerIdsAreNeverReusedAfterFinishedRequestsAreForgotten) {
  RequestBookOptions o = Fast();
  o.kept_finished = 1;
  RequestBook book(o, AcceptEdit, nullptr);
  std::set<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto h = book.Add(Request(absl::StrCat("r", i)));
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(ids.insert(h->id()).second) << h->id();
    pb::DecideRequest d = Deny("", "no");
    d.set_id(h->id());
    ASSERT_TRUE(book.Decide(d).ok());
  }
  // Only the last finished one is still held, by its id too.
  EXPECT_EQ(book.GetById(*ids.begin()).status().code(), absl::StatusCode::kNotFound);
}

TEST(RequestBookTest, BrokerIdForm) {
  EXPECT_TRUE(IsValidBrokerId("q1"));
  EXPECT_TRUE(IsValidBrokerId("q1234567890123456789"));
  EXPECT_FALSE(IsValidBrokerId("q"));
  EXPECT_FALSE(IsValidBrokerId("q12345678901234567890"));
  EXPECT_FALSE(IsValidBrokerId("r1"));
  EXPECT_FALSE(IsValidBrokerId("q1a"));
  EXPECT_FALSE(IsValidBrokerId(""));
}

TEST(RequestBookTest, RequestIdCharset) {
  EXPECT_TRUE(IsValidRequestId("a-Z_0.9"));
  EXPECT_TRUE(IsValidRequestId(std::string(64, 'x')));
  EXPECT_FALSE(IsValidRequestId(std::string(65, 'x')));
  EXPECT_FALSE(IsValidRequestId(""));
  EXPECT_FALSE(IsValidRequestId("a b"));
  EXPECT_FALSE(IsValidRequestId("a/b"));
  EXPECT_FALSE(IsValidRequestId("\xc3\xa9"));
}

}  // namespace
}  // namespace lazaret::brokerd
