#include "services/vocab/domain_pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace lazaret::vocab {
namespace {

using ::testing::HasSubstr;

TEST(DomainPatternTest, AcceptsNamesAndWildcardsInCanonicalForm) {
  const std::pair<const char*, const char*> cases[] = {
      {"example.com", "example.com"},
      {"API.Example.COM", "api.example.com"},
      {"registry.npmjs.org.", "registry.npmjs.org"},
      {"*.example.org", "*.example.org"},
      {"*.Example.Org.", "*.example.org"},
      {"xn--bcher-kva.example", "xn--bcher-kva.example"},
      {"a-b.c-d.e1", "a-b.c-d.e1"},
      {"1password.com", "1password.com"},
      {"x.y.z.example.co.uk", "x.y.z.example.co.uk"},
  };
  for (const auto& [text, canonical] : cases) {
    absl::StatusOr<std::string> n = CheckDomainPattern(text);
    ASSERT_TRUE(n.ok()) << text << ": " << n.status();
    EXPECT_EQ(*n, canonical) << text;
  }
  const std::string label63(63, 'a');
  EXPECT_TRUE(CheckDomainPattern(label63 + ".com").ok());
  // 253 characters in all: four labels of 61 and one of 5 with their dots.
  const std::string l61(61, 'b');
  const std::string longest = l61 + "." + l61 + "." + l61 + "." + l61 + ".abcde";
  ASSERT_EQ(longest.size(), 253u);
  EXPECT_TRUE(CheckDomainPattern(longest).ok());
  EXPECT_TRUE(CheckDomainPattern(longest + ".").ok());  // the trailing dot is not counted
}

TEST(DomainPatternTest, RefusesEverythingButLdhNamesWithAReason) {
  const std::string l61(61, 'b');
  const std::string too_long = l61 + "." + l61 + "." + l61 + "." + l61 + ".abcdef";
  const std::pair<std::string, const char*> cases[] = {
      {"", "empty name"},
      {".", "it has no labels"},
      {"com", "at least two labels"},
      {"localhost", "at least two labels"},
      {"*", "\"*\" alone would match every name"},
      {"*.", "\"*\" alone"},
      {"*.com", "\"*.com\" would open a whole top-level domain"},
      {"a.*.com", "'*' is only allowed as the whole first label"},
      {"*foo.example.com", "'*' is only allowed as the whole first label"},
      {"**.example.com", "'*' is only allowed"},
      {"*.*.example.com", "'*' is only allowed"},
      {"example..com", "empty label"},
      {".example.com", "empty label"},
      {"example.com..", "empty label"},
      {"_dmarc.example.com", "'_' is not allowed in a host name"},
      {"-a.example.com", "starts or ends with '-'"},
      {"a-.example.com", "starts or ends with '-'"},
      {"ex ample.com", "only letters, digits and '-'"},
      {"exa\tmple.com", "only letters, digits and '-'"},
      {"ex/ample.com", "only letters, digits and '-'"},
      {"b\xc3\xbc"
       "cher.example",
       "write an internationalised name in its \"xn--\" form"},
      {"10.0.0.1", "numeric label; addresses belong in allow_egress"},
      {"1.2.3.4.", "numeric label"},
      {"2001:db8::1", "':' is not part of a name"},
      {"example.com:443", "no ports"},
      {"[::1]", "':' is not part of a name"},
      {std::string(64, 'a') + ".com", "is longer than 63 characters"},
      {too_long, "longer than 253 characters"},
  };
  for (const auto& [text, why] : cases) {
    absl::StatusOr<std::string> n = CheckDomainPattern(text);
    ASSERT_FALSE(n.ok()) << text << " -> " << *n;
    EXPECT_THAT(n.status().message(), HasSubstr(why)) << text;
  }
  // What the agent wrote is quoted without its control characters.
  absl::StatusOr<std::string> n = CheckDomainPattern("a\x1b[2J.com");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(std::string(n.status().message()).find('\x1b'), std::string::npos);
}

TEST(DomainPatternTest, AWildcardCoversNamesBelowItNotItsBase) {
  EXPECT_TRUE(DomainCovers("a.com", "a.com"));
  EXPECT_FALSE(DomainCovers("a.com", "x.a.com"));
  EXPECT_FALSE(DomainCovers("a.com", "*.a.com"));
  EXPECT_TRUE(DomainCovers("*.a.com", "*.a.com"));
  EXPECT_TRUE(DomainCovers("*.a.com", "x.a.com"));
  EXPECT_TRUE(DomainCovers("*.a.com", "y.x.a.com"));
  EXPECT_TRUE(DomainCovers("*.a.com", "*.x.a.com"));
  EXPECT_FALSE(DomainCovers("*.a.com", "a.com"));
  EXPECT_FALSE(DomainCovers("*.a.com", "xa.com"));
  EXPECT_FALSE(DomainCovers("*.a.com", "x.b.com"));
  EXPECT_FALSE(DomainCovers("*.x.a.com", "*.a.com"));
  EXPECT_FALSE(DomainCovers("*.x.a.com", "y.a.com"));
  EXPECT_FALSE(DomainCovers("x.a.com", "*.a.com"));
  EXPECT_FALSE(DomainCovers("*.a.com", "a.com.evil"));
}

TEST(DomainPatternTest, CoverageIsCaseInsensitiveAndIgnoresTrailingDot) {
  EXPECT_TRUE(DomainCovers("api.example.com", "API.Example.COM."));
  EXPECT_TRUE(DomainCovers("api.example.com.", "api.example.com"));
  EXPECT_TRUE(DomainCovers("*.example.com", "X.EXAMPLE.com."));
  EXPECT_FALSE(DomainCovers("api.example.com", "www.api.example.com"));
  EXPECT_FALSE(DomainCovers("api.example.com", ""));
}

TEST(DnsNameTest, NormalizeDnsPatternAcceptsUnderscoresAndLowercases) {
  EXPECT_EQ(*NormalizeDnsPattern("API.Example.com."), "api.example.com");
  EXPECT_EQ(*NormalizeDnsPattern("*.Example.com"), "*.example.com");
  EXPECT_EQ(*NormalizeDnsPattern("_sip._tcp.example.com"), "_sip._tcp.example.com");
}

TEST(DnsNameTest, NormalizeDnsPatternRefusesBadPatterns) {
  for (const char* bad : {"", ".", "*", "*.", "a..b", "a.*.b", "**.a.com", "a b.com", "a/b.com",
                          "ä.com", "*x.a.com"}) {
    EXPECT_FALSE(NormalizeDnsPattern(bad).ok()) << bad;
  }
  EXPECT_FALSE(NormalizeDnsPattern(std::string(64, 'a') + ".com").ok());
  EXPECT_TRUE(NormalizeDnsPattern(std::string(63, 'a') + ".com").ok());
}

TEST(DnsNameTest, PlainNameRefusesLabelsThatCouldFakeAMatch) {
  EXPECT_EQ(PlainName({"Api", "Example", "com"}), "api.example.com");
  // A label holding a dot would print as a listed name.
  EXPECT_EQ(PlainName({"api.example", "com"}), "");
  EXPECT_EQ(PlainName({"api", std::string("exa\0mple", 8), "com"}), "");
  EXPECT_EQ(PlainName({}), "");
  EXPECT_EQ(PlainName({"", "com"}), "");
  EXPECT_EQ(PlainName({std::string(64, 'a')}), "");
}

TEST(DnsNameTest, IsPlainNameAcceptsOnlyWhatPlainNameReturns) {
  EXPECT_TRUE(IsPlainName("api.example.com"));
  EXPECT_TRUE(IsPlainName("_sip._tcp.example.com"));
  EXPECT_TRUE(IsPlainName(PlainName({"Api", "Example", "com"})));
  for (const char* bad : {"", ".", "a..b", ".a", "a.", "API.example.com", "*.a.com", "a b.com"}) {
    EXPECT_FALSE(IsPlainName(bad)) << bad;
  }
  EXPECT_FALSE(IsPlainName(std::string(64, 'a') + ".com"));
  EXPECT_FALSE(IsPlainName(std::string("a\0b.com", 7)));
}

}  // namespace
}  // namespace lazaret::vocab
