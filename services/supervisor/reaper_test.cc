#include "services/supervisor/reaper.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazaret::supervisor {
namespace {

TEST(ReaperWireTest, RequestRoundTripsAndIsFixedSize) {
  const std::string req = EncodeReapRequest("0123456789ab");
  EXPECT_EQ(req.size(), kReapRequestSize);
  EXPECT_EQ(ParseReapRequest(req), "0123456789ab");
}

TEST(ReaperWireTest, AnythingButAnIdIsRefused) {
  for (const std::string& bad : std::vector<std::string>{
           "0123456789AB\n", "0123456789a\n\n", "../../etc/pa\n", "0123456789ab ", "0123456789ab",
        std::string("0123456789a\0\n", 13), "-rf 45678901\n"}) {
    EXPECT_FALSE(ParseReapRequest(bad).has_value()) << bad;
  }
}

TEST(ReaperWireTest, ResultRoundTrips) {
  const std::string r = EncodeReapResult("abcdefabcdef", 4);
  EXPECT_EQ(r, "abcdefabcdef 004\n");
  ASSERT_EQ(r.size(), kReapResultSize);
  auto parsed = ParseReapResult(r);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->first, "abcdefabcdef");
  EXPECT_EQ(parsed->second, 4);
  EXPECT_FALSE(ParseReapResult("abcdefabcdef 0x4\n").has_value());
}

}  // namespace
}  // namespace lazaret::supervisor
