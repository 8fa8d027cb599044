#include "sidecar/namespace_guard.h"

#include <gtest/gtest.h>

namespace lazaret::netrouter {
namespace {

TEST(NamespaceGuardTest, ClosesOnceWhenTheLastHoldEndsAndNeverReopens) {
  int closes = 0;
  NamespaceGuard guard([&] {
    ++closes;
    return absl::OkStatus();
  });
  ASSERT_EQ(*guard.Acquire("cli"), 1u);
  ASSERT_EQ(*guard.Acquire("supervisor"), 2u);
  guard.Release("supervisor");
  EXPECT_EQ(closes, 0) << "one hold is still open";
  EXPECT_FALSE(guard.closed());
  guard.Release("cli");
  EXPECT_EQ(closes, 1);
  EXPECT_TRUE(guard.closed());
  absl::StatusOr<uint32_t> late = guard.Acquire("cli");
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  guard.Release("cli");
  EXPECT_EQ(closes, 1);
}

TEST(NamespaceGuardTest, StaysOpenUntilAnyoneHolds) {
  int closes = 0;
  NamespaceGuard guard([&] {
    ++closes;
    return absl::OkStatus();
  });
  guard.Release("nobody");  // a release without a hold changes nothing
  EXPECT_EQ(closes, 0);
  EXPECT_FALSE(guard.closed());
}

TEST(NamespaceGuardTest, AFailedCloseStillRefusesNewHolds) {
  NamespaceGuard guard([] { return absl::InternalError("netlink said no"); });
  ASSERT_TRUE(guard.Acquire("cli").ok());
  guard.Release("cli");
  EXPECT_TRUE(guard.closed());
  EXPECT_FALSE(guard.Acquire("cli").ok());
}

}  // namespace
}  // namespace lazaret::netrouter
