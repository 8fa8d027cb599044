#include "services/netpolicyd/names.h"

#include "gtest/gtest.h"

namespace lazaret::netpolicyd {
namespace {

TEST(NamesTest, WildcardMatchesBelowButNotTheNameItself) {
  EXPECT_TRUE(NameMatches("*.a.com", "x.a.com"));
  EXPECT_TRUE(NameMatches("*.a.com", "y.x.a.com"));
  EXPECT_FALSE(NameMatches("*.a.com", "a.com"));
  EXPECT_FALSE(NameMatches("*.a.com", "xa.com"));
  EXPECT_FALSE(NameMatches("*.a.com", "a.com.evil"));
}

TEST(NamesTest, ExactMatchIsCaseInsensitiveAndIgnoresTrailingDot) {
  EXPECT_TRUE(NameMatches("api.example.com", "API.Example.COM."));
  EXPECT_TRUE(NameMatches("api.example.com.", "api.example.com"));
  EXPECT_TRUE(NameMatches("*.example.com", "X.EXAMPLE.com."));
  EXPECT_FALSE(NameMatches("api.example.com", "www.api.example.com"));
  EXPECT_FALSE(NameMatches("api.example.com", ""));
}

TEST(NamesTest, NormalizePatternAcceptsAndLowercases) {
  EXPECT_EQ(*NormalizePattern("API.Example.com."), "api.example.com");
  EXPECT_EQ(*NormalizePattern("*.Example.com"), "*.example.com");
  EXPECT_EQ(*NormalizePattern("_sip._tcp.example.com"), "_sip._tcp.example.com");
}

TEST(NamesTest, NormalizePatternRefusesBadPatterns) {
  for (const char* bad : {"", ".", "*", "*.", "a..b", "a.*.b", "**.a.com", "a b.com", "a/b.com",
                          "ä.com", "*x.a.com"}) {
    EXPECT_FALSE(NormalizePattern(bad).ok()) << bad;
  }
  EXPECT_FALSE(NormalizePattern(std::string(64, 'a') + ".com").ok());
  EXPECT_TRUE(NormalizePattern(std::string(63, 'a') + ".com").ok());
}

TEST(NamesTest, PlainNameRefusesLabelsThatCouldFakeAMatch) {
  EXPECT_EQ(PlainName({"Api", "Example", "com"}), "api.example.com");
  // A label holding a dot would print as a listed name.
  EXPECT_EQ(PlainName({"api.example", "com"}), "");
  EXPECT_EQ(PlainName({"api", std::string("exa\0mple", 8), "com"}), "");
  EXPECT_EQ(PlainName({}), "");
  EXPECT_EQ(PlainName({"", "com"}), "");
  EXPECT_EQ(PlainName({std::string(64, 'a')}), "");
}

}  // namespace
}  // namespace lazaret::netpolicyd
