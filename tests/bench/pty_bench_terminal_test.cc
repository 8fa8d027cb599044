#include "tests/bench/pty_bench_terminal.h"

#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lazaret::test::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::unique_ptr<BenchTerminal> Sh(const std::string& script) {
  absl::StatusOr<std::unique_ptr<BenchTerminal>> t =
      BenchTerminal::Start("/", {"sh", "-c", script});
  if (!t.ok()) {
    ADD_FAILURE() << t.status();
    return nullptr;
  }
  return std::move(*t);
}

Clock::time_point In(Clock::duration d) { return Clock::now() + d; }

TEST(BenchTerminalTest, CountsEveryFillByteBetweenTheMarkers) {
  auto t = Sh("printf 'B%s' EGIN; head -c 1000000 /dev/zero | tr '\\0' x; printf 'E%s' ND");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->AwaitMarker("BEGIN", In(seconds(10))).ok());
  absl::StatusOr<BenchTerminal::Flood> f = t->CountUntil('x', "END", In(seconds(10)));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->fill, 1000000u);
  EXPECT_EQ(f->other, 0u);
  EXPECT_EQ(f->newline, 0u);
  absl::StatusOr<int> code = t->Wait(In(seconds(10)));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

TEST(BenchTerminalTest, ForeignBytesAndLineEndsAreCountedApart) {
  auto t = Sh("printf 'B%s' EGIN; printf 'xx\\nyx'; printf 'E%s' ND");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->AwaitMarker("BEGIN", In(seconds(10))).ok());
  absl::StatusOr<BenchTerminal::Flood> f = t->CountUntil('x', "END", In(seconds(10)));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->fill, 3u);
  EXPECT_EQ(f->other, 1u);
  EXPECT_EQ(f->newline, 2u);  // the pty's ONLCR made "\r\n" of the "\n"
}

TEST(BenchTerminalTest, AMissingMarkerIsAnErrorNotAHang) {
  auto quiet = Sh("sleep 30");
  ASSERT_NE(quiet, nullptr);
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(quiet->AwaitMarker("BEGIN", In(milliseconds(300))).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(Clock::now() - start, seconds(5));

  auto gone = Sh("printf 'xxx'; exit 3");
  ASSERT_NE(gone, nullptr);
  EXPECT_FALSE(gone->CountUntil('x', "END", In(seconds(30))).ok());
  absl::StatusOr<int> code = gone->Wait(In(seconds(10)));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 3);
}

TEST(BenchTerminalTest, EchoRoundTripReadsTheEchoAndKeepsWhatFollows) {
  // The bench's own pty echoes here (nothing made it raw): the echo comes
  // back, and OuterPtyEchoes says so.
  auto t = Sh("stty -icanon; printf 'R%s' EADY; head -c 2 >/dev/null; printf 'D%s' ONE");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->AwaitMarker("READY", In(seconds(10))).ok());
  EXPECT_TRUE(t->OuterPtyEchoes());
  for (char c : {'a', 'b'}) {
    absl::StatusOr<Clock::duration> rtt = t->EchoRoundTrip(c, seconds(5));
    ASSERT_TRUE(rtt.ok()) << rtt.status();
    EXPECT_GT(rtt->count(), 0);
  }
  EXPECT_TRUE(t->AwaitMarker("DONE", In(seconds(10))).ok());
}

TEST(BenchTerminalTest, OutputBeforeAKeyIsAnError) {
  // The script answers the first key with output of its own: the next key
  // finds bytes that are not its echo waiting, and says so.
  auto t = Sh("stty -icanon; printf 'R%s' EADY; head -c 1 >/dev/null; printf 'junk'; sleep 30");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->AwaitMarker("READY", In(seconds(10))).ok());
  absl::StatusOr<Clock::duration> first = t->EchoRoundTrip('a', seconds(5));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(t->AwaitMarker("ju", In(seconds(10))).ok());
  absl::StatusOr<Clock::duration> second = t->EchoRoundTrip('b', seconds(5));
  EXPECT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()), ::testing::HasSubstr("before a key"));
}

}  // namespace
}  // namespace lazaret::test::bench
