#include "services/sessiond/session/attach_hub.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace lazaret::cli::session {
namespace {

namespace sv1 = ::lazaret::session::v1;

struct FakeIo : AttachHub::Io {
  void WriteInput(std::string bytes) override { input += bytes; }
  void CloseInput() override { closed = true; }
  bool Resize(uint32_t r, uint32_t c) override {
    const bool changed = sizes.empty() || sizes.back() != std::make_pair(r, c);
    sizes.emplace_back(r, c);
    return changed;
  }
  void Redraw() override { ++redraws; }
  std::string input;
  bool closed = false;
  std::vector<std::pair<uint32_t, uint32_t>> sizes;
  int redraws = 0;
};

struct FakeEvents : AttachHub::Events {
  void StopRequested(const std::string& reason) override { stops.push_back(reason); }
  void AttendanceChanged() override { ++changes; }
  std::vector<std::string> stops;
  int changes = 0;
};

sv1::AttachHello Hello(bool take_input, bool replay = false, uint32_t rows = 30,
                       uint32_t cols = 100) {
  sv1::AttachHello h;
  h.set_take_input(take_input);
  h.set_replay(replay);
  h.mutable_size()->set_rows(rows);
  h.mutable_size()->set_cols(cols);
  return h;
}

sv1::AttachInput Keys(const std::string& k) {
  sv1::AttachInput in;
  in.set_stdin(k);
  return in;
}

// Everything queued for `c` now.
std::vector<sv1::AttachOutput> Drain(AttachHub::Client* c) {
  std::vector<sv1::AttachOutput> out;
  sv1::AttachOutput o;
  while (c->TryNext(&o)) out.push_back(o);
  return out;
}

std::string TerminalBytes(const std::vector<sv1::AttachOutput>& outs) {
  std::string s;
  for (const auto& o : outs) {
    if (o.has_terminal()) s += o.terminal();
  }
  return s;
}

// The last state message in `outs`.
sv1::AttachState LastState(const std::vector<sv1::AttachOutput>& outs) {
  sv1::AttachState st;
  for (const auto& o : outs) {
    if (o.has_state()) st = o.state();
  }
  return st;
}

class AttachHubTest : public ::testing::Test {
 protected:
  AttachHub MakeHub(AttachHub::Mode mode, size_t max_queue = 4 << 20, size_t max_kept = 1 << 20) {
    AttachHub::Options o;
    o.mode = mode;
    o.session_id = "0123456789ab";
    o.max_replay_bytes = 64;
    o.max_queue_bytes = max_queue;
    o.max_kept_bytes = max_kept;
    return AttachHub(o, &io_, &events_);
  }
  FakeIo io_;
  FakeEvents events_;
};

TEST_F(AttachHubTest, OnlyTheInputHolderTypesAndTheLastToTakeItHoldsIt) {
  AttachHub hub(AttachHub::Options{AttachHub::Mode::kTty, "s"}, &io_, &events_);
  auto a = hub.Attach(Hello(true));
  auto watcher = hub.Attach(Hello(false));
  hub.Input(a, Keys("from-a "));
  hub.Input(watcher, Keys("from-watcher "));
  EXPECT_EQ(io_.input, "from-a ");
  EXPECT_TRUE(LastState(Drain(a.get())).has_input());
  EXPECT_FALSE(LastState(Drain(watcher.get())).has_input());

  auto b = hub.Attach(Hello(true, false, 50, 200));
  hub.Input(a, Keys("late-a "));
  hub.Input(b, Keys("from-b "));
  EXPECT_EQ(io_.input, "from-a from-b ");
  // The pty's size followed the new holder.
  ASSERT_FALSE(io_.sizes.empty());
  EXPECT_EQ(io_.sizes.back(), std::make_pair(50u, 200u));
  EXPECT_FALSE(LastState(Drain(a.get())).has_input());

  sv1::AttachInput take;
  take.set_take_input(true);
  hub.Input(a, take);
  hub.Input(a, Keys("again-a"));
  EXPECT_EQ(io_.input, "from-a from-b again-a");
  EXPECT_EQ(io_.sizes.back(), std::make_pair(30u, 100u));
  EXPECT_EQ(LastState(Drain(a.get())).attached(), 3u);
}

TEST_F(AttachHubTest, ResizeFromANonHolderIsIgnoredAndSizesAreClamped) {
  AttachHub hub(AttachHub::Options{AttachHub::Mode::kTty, "s"}, &io_, &events_);
  auto holder = hub.Attach(Hello(true));
  auto watcher = hub.Attach(Hello(false));
  io_.sizes.clear();
  sv1::AttachInput r;
  r.mutable_resize()->set_rows(10);
  r.mutable_resize()->set_cols(10);
  hub.Input(watcher, r);
  EXPECT_TRUE(io_.sizes.empty());
  r.mutable_resize()->set_rows(1u << 30);
  r.mutable_resize()->set_cols(90);
  hub.Input(holder, r);
  ASSERT_EQ(io_.sizes.size(), 1u);
  EXPECT_EQ(io_.sizes[0], std::make_pair(4096u, 90u));
}

TEST_F(AttachHubTest, WhenTheHolderLeavesTheInputGoesToTheLastClientThatWantedIt) {
  AttachHub hub(AttachHub::Options{AttachHub::Mode::kTty, "s"}, &io_, &events_);
  auto first = hub.Attach(Hello(true, false, 20, 80));
  auto watcher = hub.Attach(Hello(false));
  auto second = hub.Attach(Hello(true, false, 40, 120));
  hub.Detach(second);
  hub.Input(first, Keys("x"));
  hub.Input(watcher, Keys("y"));
  EXPECT_EQ(io_.input, "x");
  EXPECT_EQ(io_.sizes.back(), std::make_pair(20u, 80u));
  EXPECT_EQ(LastState(Drain(first.get())).attached(), 2u);
  // A detached client's stream ends.
  sv1::AttachOutput o;
  while (second->TryNext(&o)) {
  }
  EXPECT_FALSE(second->Next(&o));
}

TEST_F(AttachHubTest, ReplayStartsAtALineStartAndEndsInTheAgentsModes) {
  AttachHub hub = MakeHub(AttachHub::Mode::kTty);
  std::string out;
  for (int i = 0; i < 20; ++i) out += "line " + std::to_string(i) + "\r\n";
  hub.TerminalOutput(out);
  hub.TerminalOutput("\x1b[?2004h\x1b[?25l");  // bracketed paste on, cursor hidden
  auto c = hub.Attach(Hello(true, /*replay=*/true));
  const std::string shown = TerminalBytes(Drain(c.get()));
  EXPECT_LE(shown.size(), 64u + 32u);
  EXPECT_EQ(shown.rfind("line 1", 0), 0u) << shown;  // a whole line first
  EXPECT_NE(shown.find("line 19\r\n"), std::string::npos);
  EXPECT_EQ(shown.find("line 0\r"), std::string::npos);
  EXPECT_NE(shown.find("\x1b[?2004h"), std::string::npos);
  EXPECT_NE(shown.find("\x1b[?25l"), std::string::npos);
  EXPECT_EQ(io_.redraws, 0);
}

TEST_F(AttachHubTest, OnTheAlternateScreenAttachEntersItAndAsksForARedraw) {
  AttachHub hub = MakeHub(AttachHub::Mode::kTty);
  hub.TerminalOutput("shell prompt $ ");
  hub.TerminalOutput("\x1b[?1049h\x1b[Hfull screen program");
  // A new size: the resize has the program draw itself, nothing more.
  auto c = hub.Attach(Hello(true, /*replay=*/true));
  const std::string shown = TerminalBytes(Drain(c.get()));
  EXPECT_NE(shown.find("\x1b[?1049h"), std::string::npos);
  EXPECT_EQ(shown.find("full screen program"), std::string::npos);
  EXPECT_EQ(shown.find("shell prompt"), std::string::npos);
  EXPECT_EQ(io_.sizes.size(), 1u);
  EXPECT_EQ(io_.redraws, 0);
  // The size the pty has already: a redraw is asked for.
  hub.Detach(c);
  auto again = hub.Attach(Hello(true, /*replay=*/true));
  EXPECT_EQ(io_.sizes.size(), 2u);
  EXPECT_EQ(io_.redraws, 1);
}

TEST_F(AttachHubTest, WithoutReplayANewClientSeesOnlyNewOutput) {
  AttachHub hub = MakeHub(AttachHub::Mode::kTty);
  hub.TerminalOutput("old\r\n");
  auto c = hub.Attach(Hello(true, /*replay=*/false));
  hub.TerminalOutput("new\r\n");
  EXPECT_EQ(TerminalBytes(Drain(c.get())), "new\r\n");
}

TEST_F(AttachHubTest, ATtyClientThatFallsBehindIsDetachedAndTheOthersKeepGoing) {
  AttachHub hub = MakeHub(AttachHub::Mode::kTty, /*max_queue=*/1000);
  auto slow = hub.Attach(Hello(true));
  auto fast = hub.Attach(Hello(false));
  const std::string chunk(300, 'x');
  for (int i = 0; i < 10; ++i) {
    hub.TerminalOutput(chunk);
    Drain(fast.get());
  }
  std::vector<sv1::AttachOutput> got = Drain(slow.get());
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(got.back().has_notice());
  EXPECT_NE(got.back().notice().find("fell too far behind"), std::string::npos);
  sv1::AttachOutput o;
  EXPECT_FALSE(slow->Next(&o));
  EXPECT_EQ(hub.attendance().attached, 1u);
  hub.TerminalOutput("still here");
  EXPECT_EQ(TerminalBytes(Drain(fast.get())), "still here");
}

TEST_F(AttachHubTest, ATtySessionIsPacedToTheInputHolderWhoIsDetachedOnlyWhenStuck) {
  AttachHub::Options o;
  o.mode = AttachHub::Mode::kTty;
  o.session_id = "s";
  o.max_holder_lag_bytes = 500;
  o.max_holder_stall = absl::Milliseconds(100);
  AttachHub hub(o, &io_, &events_);
  auto watcher = hub.Attach(Hello(false));
  EXPECT_TRUE(hub.WantsTerminalOutput());  // no holder: nothing to pace to
  auto holder = hub.Attach(Hello(true));
  hub.TerminalOutput(std::string(600, 'x'));
  EXPECT_FALSE(hub.WantsTerminalOutput());  // the pty waits for the holder
  Drain(holder.get());
  EXPECT_TRUE(hub.WantsTerminalOutput());
  hub.TerminalOutput(std::string(600, 'y'));
  EXPECT_FALSE(hub.WantsTerminalOutput());
  absl::SleepFor(absl::Milliseconds(150));
  EXPECT_TRUE(hub.WantsTerminalOutput());  // stuck too long: detached
  std::vector<sv1::AttachOutput> got = Drain(holder.get());
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(got.back().has_notice());
  EXPECT_EQ(hub.attendance().attached, 1u);
  EXPECT_FALSE(LastState(Drain(watcher.get())).has_input());
}

TEST_F(AttachHubTest, StreamOutputWhileNobodyIsAttachedIsKeptInOrderThenBlocks) {
  AttachHub hub = MakeHub(AttachHub::Mode::kStream, 4 << 20, /*max_kept=*/12);
  hub.StreamOutput(false, "out1 ");
  hub.StreamOutput(true, "err1 ");
  EXPECT_TRUE(hub.WantsStreamOutput());
  hub.StreamOutput(false, "out2 ");
  EXPECT_FALSE(hub.WantsStreamOutput());  // the pump stops reading: nothing is lost
  auto c = hub.Attach(Hello(true));
  std::string out, err;
  std::string order;
  for (const auto& o : Drain(c.get())) {
    if (o.has_stdout()) {
      out += o.stdout();
      order += "o";
    }
    if (o.has_stderr()) {
      err += o.stderr();
      order += "e";
    }
  }
  EXPECT_EQ(out, "out1 out2 ");
  EXPECT_EQ(err, "err1 ");
  EXPECT_EQ(order, "oeo");
  EXPECT_TRUE(hub.WantsStreamOutput());
}

TEST_F(AttachHubTest, AStreamClientsFullQueueHoldsTheCommandInsteadOfDroppingIt) {
  AttachHub hub = MakeHub(AttachHub::Mode::kStream, /*max_queue=*/100);
  auto c = hub.Attach(Hello(true));
  hub.StreamOutput(false, std::string(150, 'a'));
  EXPECT_FALSE(hub.WantsStreamOutput());
  EXPECT_EQ(hub.attendance().attached, 1u);
  Drain(c.get());
  EXPECT_TRUE(hub.WantsStreamOutput());
}

TEST_F(AttachHubTest, StdinEofFromTheHolderClosesStdin) {
  AttachHub hub = MakeHub(AttachHub::Mode::kStream);
  auto watcher = hub.Attach(Hello(false));
  sv1::AttachInput eof;
  eof.set_stdin_eof(true);
  hub.Input(watcher, eof);
  EXPECT_FALSE(io_.closed);
  auto holder = hub.Attach(Hello(true));
  hub.Input(holder, Keys("data"));
  hub.Input(holder, eof);
  EXPECT_EQ(io_.input, "data");
  EXPECT_TRUE(io_.closed);
}

TEST_F(AttachHubTest, StopAndRedrawArePassedOn) {
  AttachHub hub = MakeHub(AttachHub::Mode::kTty);
  auto c = hub.Attach(Hello(false));
  sv1::AttachInput in;
  in.set_redraw(true);
  hub.Input(c, in);
  EXPECT_EQ(io_.redraws, 1);
  in.set_stop(true);
  hub.Input(c, in);
  ASSERT_EQ(events_.stops.size(), 1u);
}

TEST_F(AttachHubTest, ExitIsTheLastMessageAndLaterAttachesGetOnlyIt) {
  AttachHub hub = MakeHub(AttachHub::Mode::kTty);
  auto c = hub.Attach(Hello(true));
  hub.Notice("lazaret: git shadow: imported 1 commit");
  hub.Exit(3, "");
  std::vector<sv1::AttachOutput> got = Drain(c.get());
  ASSERT_GE(got.size(), 2u);
  EXPECT_TRUE(got[got.size() - 2].has_notice());
  ASSERT_TRUE(got.back().has_exit());
  EXPECT_EQ(got.back().exit().exit_code(), 3);
  sv1::AttachOutput o;
  EXPECT_FALSE(c->Next(&o));
  hub.TerminalOutput("after the end");
  auto late = hub.Attach(Hello(true));
  got = Drain(late.get());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].has_exit());
  EXPECT_FALSE(hub.WaitAllDetached(absl::Milliseconds(10)));
  hub.Detach(c);
  EXPECT_TRUE(hub.WaitAllDetached(absl::Milliseconds(10)));
}

// A connection the hub writes to itself: what it took, and when it is full
// or takes only part of a frame.
struct FakeDirect : AttachHub::DirectOutput {
  std::optional<size_t> TrySend(const sv1::AttachOutput& out) override {
    if (full) return std::nullopt;
    sent.push_back(out);
    return left;
  }
  bool FlushRest() override {
    sent.push_back(sv1::AttachOutput());  // marks where the rest went
    ++flushes;
    return true;
  }
  bool full = false;
  size_t left = 0;
  int flushes = 0;
  std::vector<sv1::AttachOutput> sent;
};

TEST_F(AttachHubTest, OutputGoesStraightToADirectConnectionWhileNothingWaitsInOrder) {
  AttachHub hub = MakeHub(AttachHub::Mode::kTty);
  FakeDirect direct;
  auto c = hub.Attach(Hello(true), &direct);
  // The state and the output went out without the queue.
  hub.TerminalOutput("a");
  ASSERT_EQ(direct.sent.size(), 2u);
  EXPECT_TRUE(direct.sent[0].has_state());
  EXPECT_EQ(direct.sent[1].terminal(), "a");
  EXPECT_TRUE(Drain(c.get()).empty());

  // Full: queued; while the writer holds what Next gave it, later output
  // queues behind it rather than overtaking it.
  direct.full = true;
  hub.TerminalOutput("b");
  direct.full = false;
  sv1::AttachOutput o;
  ASSERT_TRUE(c->Next(&o));
  EXPECT_EQ(o.terminal(), "b");
  hub.TerminalOutput("c");
  EXPECT_EQ(direct.sent.size(), 2u);
  hub.TerminalOutput("d");
  ASSERT_TRUE(c->Next(&o));  // the writer wrote "b" and asks again
  EXPECT_EQ(o.terminal(), "cd");

  // A frame the hub began: its rest goes first, output waits behind it.
  auto d = hub.Attach(Hello(false), &direct);
  direct.sent.clear();
  direct.left = 3;
  hub.TerminalOutput("e");  // c's writer holds "cd": queued for c; d: begun
  direct.left = 0;
  hub.TerminalOutput("f");
  ASSERT_TRUE(d->Next(&o));
  EXPECT_EQ(direct.flushes, 1);
  EXPECT_EQ(o.terminal(), "f");
  ASSERT_EQ(direct.sent.size(), 2u);
  EXPECT_EQ(direct.sent[0].terminal(), "e");
  EXPECT_EQ(direct.sent[1].output_case(), sv1::AttachOutput::OUTPUT_NOT_SET);

  // The exit always goes through the queue.
  hub.Detach(c);
  ASSERT_TRUE(d->Next(&o));  // "f" written; the state after c left
  EXPECT_TRUE(o.has_state());
  hub.Exit(3, "done");
  ASSERT_TRUE(d->Next(&o));
  EXPECT_TRUE(o.has_exit());
  EXPECT_FALSE(d->Next(&o));
}

TEST(UnattendedTest, KeepStopsAfterTheLimitStopAtOnceStreamWhenItsClientIsGone) {
  lazaret::config::v1::SessionSettings settings;
  const absl::Time t = absl::FromUnixSeconds(1000000);
  Attendance gone{0, true, t};
  Attendance here{1, true, absl::InfinitePast()};

  UnattendedPolicy keep = UnattendedPolicyOf(settings, /*stream=*/false);  // unset: keep, 12 h
  EXPECT_EQ(UnattendedStopAt(keep, gone), t + absl::Hours(12));
  EXPECT_EQ(UnattendedStopAt(keep, here), absl::InfiniteFuture());
  EXPECT_EQ(UnattendedStopReason(keep, gone), "after 12h with no terminal attached (detached_limit)");

  settings.set_detached_limit_seconds(90);
  EXPECT_EQ(UnattendedStopAt(UnattendedPolicyOf(settings, false), gone), t + absl::Seconds(90));

  settings.set_on_detach(lazaret::config::v1::ON_DETACH_STOP);
  UnattendedPolicy stop = UnattendedPolicyOf(settings, false);
  EXPECT_EQ(UnattendedStopAt(stop, gone), t);
  // Never attached yet (the starting client is on its way): a grace.
  Attendance never{0, false, t};
  EXPECT_EQ(UnattendedStopAt(stop, never), t + absl::Seconds(60));

  UnattendedPolicy stream = UnattendedPolicyOf(lazaret::config::v1::SessionSettings(), true);
  EXPECT_EQ(UnattendedStopAt(stream, gone), t);
  EXPECT_EQ(UnattendedStopReason(stream, gone), "when its client was gone");
}

}  // namespace
}  // namespace lazaret::cli::session
