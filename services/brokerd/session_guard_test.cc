#include "services/brokerd/session_guard.h"

#include <gtest/gtest.h>

namespace lazaret::brokerd {
namespace {

TEST(SessionGuardTest, BurstThenRateLimitedThenRefilled) {
  SessionGuard g(GuardLimits{.requests_per_second = 10, .burst = 3});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(g.TakeRequest(t0).ok()) << i;
  absl::Status st = g.TakeRequest(t0);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("rate limited"), absl::string_view::npos);
  // 100 ms refills one token at 10/s, and only one.
  EXPECT_TRUE(g.TakeRequest(t0 + absl::Milliseconds(100)).ok());
  EXPECT_FALSE(g.TakeRequest(t0 + absl::Milliseconds(100)).ok());
  // A long pause refills up to the burst, never beyond it.
  const absl::Time t1 = t0 + absl::Seconds(60);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(g.TakeRequest(t1).ok()) << i;
  EXPECT_FALSE(g.TakeRequest(t1).ok());
}

TEST(SessionGuardTest, RateLimitedRefusalsAreReportedInAggregateAtMostEveryTenSeconds) {
  SessionGuard g(GuardLimits{.requests_per_second = 1, .burst = 1});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_EQ(g.RefusalsToReport(t0), 0u);
  EXPECT_TRUE(g.TakeRequest(t0).ok());
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(g.TakeRequest(t0).ok());
  EXPECT_EQ(g.RefusalsToReport(t0), 5u);
  EXPECT_FALSE(g.TakeRequest(t0).ok());
  EXPECT_EQ(g.RefusalsToReport(t0 + absl::Seconds(9)), 0u) << "reported again too soon";
  EXPECT_EQ(g.RefusalsToReport(t0 + absl::Seconds(10)), 1u);
  EXPECT_EQ(g.RefusalsToReport(t0 + absl::Seconds(30)), 0u) << "nothing new to report";
}

TEST(SessionGuardTest, ClockGoingBackwardsGivesNoTokens) {
  SessionGuard g(GuardLimits{.requests_per_second = 10, .burst = 1});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_TRUE(g.TakeRequest(t0).ok());
  EXPECT_FALSE(g.TakeRequest(t0 - absl::Seconds(30)).ok());
}

TEST(SessionGuardTest, ConnectionCap) {
  SessionGuard g(GuardLimits{.max_connections = 2});
  EXPECT_TRUE(g.OpenConnection().ok());
  EXPECT_TRUE(g.OpenConnection().ok());
  EXPECT_EQ(g.OpenConnection().code(), absl::StatusCode::kResourceExhausted);
  g.CloseConnection();
  EXPECT_TRUE(g.OpenConnection().ok());
  EXPECT_EQ(g.open_connections(), 2u);
}

}  // namespace
}  // namespace lazaret::brokerd
