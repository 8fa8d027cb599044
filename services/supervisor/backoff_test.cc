#include "services/supervisor/backoff.h"

#include <gtest/gtest.h>

namespace lazaret::supervisor {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, DoublesFromInitialAndCapsAtMax) {
  Backoff b;
  EXPECT_EQ(b.Next(), milliseconds(200));
  EXPECT_EQ(b.Next(), milliseconds(400));
  EXPECT_EQ(b.Next(), milliseconds(800));
  for (int i = 0; i < 20; ++i) b.Next();
  EXPECT_EQ(b.Next(), Backoff::kMax);
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff b;
  b.Next();
  b.Next();
  b.Reset();
  EXPECT_EQ(b.Next(), Backoff::kInitial);
}

}  // namespace
}  // namespace lazaret::supervisor
