#include "services/vocab/cidr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::vocab {
namespace {

using ::testing::HasSubstr;

struct GoodCase {
  const char* text;
  const char* canonical;
};

TEST(CidrTest, AcceptsIpv4AndIpv6NetworksAndPrintsThemCanonically) {
  const GoodCase cases[] = {
      {"10.0.0.0/8", "10.0.0.0/8"},
      {"0.0.0.0/0", "0.0.0.0/0"},
      {"192.168.1.7/32", "192.168.1.7/32"},
      {"169.254.0.0/16", "169.254.0.0/16"},
      {"::/0", "::/0"},
      {"::1/128", "::1/128"},
      {"fc00::/7", "fc00::/7"},
      {"FE80:0:0:0::/10", "fe80::/10"},
      {"2001:0db8:0000::/32", "2001:db8::/32"},
      {"::ffff:0:0/96", "::ffff:0.0.0.0/96"},
      {"64:ff9b::/96", "64:ff9b::/96"},
  };
  for (const GoodCase& c : cases) {
    absl::StatusOr<Cidr> cidr = Cidr::Parse(c.text);
    ASSERT_TRUE(cidr.ok()) << c.text << ": " << cidr.status();
    EXPECT_EQ(cidr->ToString(), c.canonical) << c.text;
  }
}

struct BadCase {
  const char* text;
  const char* error;
};

TEST(CidrTest, RefusesMalformedNetworksWithAnExplanation) {
  const BadCase cases[] = {
      {"", "empty"},
      {"10.0.0.0", "did you mean \"10.0.0.0/32\"?"},
      {"fd00::", "did you mean \"fd00::/128\"?"},
      {"10.0.0.0/33", "invalid prefix length (0 to 32"},
      {"::/129", "invalid prefix length (0 to 128"},
      {"10.0.0.0/-1", "invalid prefix length"},
      {"10.0.0.0/+8", "invalid prefix length"},
      {"10.0.0.0/08", "invalid prefix length"},
      {"10.0.0.0/", "invalid prefix length"},
      {"10.0.0.0/8/8", "invalid prefix length"},
      {"10.0.0/8", "not a valid IPv4"},
      {"010.0.0.0/8", "not a valid IPv4"},
      {"10.0.0.256/32", "not a valid IPv4"},
      {" 10.0.0.0/8", "not a valid IPv4"},
      {"10.0.0.0/8 ", "invalid prefix length"},
      {"fe80::1%eth0/64", "not a valid IPv6"},
      {"example.com/24", "not a valid IPv4"},
      {"gggg::/16", "not a valid IPv6"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<Cidr> cidr = Cidr::Parse(c.text);
    ASSERT_FALSE(cidr.ok()) << c.text;
    EXPECT_THAT(std::string(cidr.status().message()), HasSubstr(c.error)) << c.text;
  }
}

TEST(CidrTest, HostBitsSetSuggestsTheNetworkMeant) {
  const BadCase cases[] = {
      {"10.1.2.3/8", "did you mean \"10.0.0.0/8\"?"},
      {"192.168.1.1/24", "did you mean \"192.168.1.0/24\"?"},
      {"172.16.5.4/12", "did you mean \"172.16.0.0/12\"?"},
      {"10.0.0.1/31", "did you mean \"10.0.0.0/31\"?"},
      {"2001:db8::1/32", "did you mean \"2001:db8::/32\"?"},
      {"fe80::1/10", "did you mean \"fe80::/10\"?"},
      {"fd12:b456::1/17", "did you mean \"fd12:8000::/17\"?"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<Cidr> cidr = Cidr::Parse(c.text);
    ASSERT_FALSE(cidr.ok()) << c.text;
    EXPECT_THAT(std::string(cidr.status().message()), HasSubstr("host bits set")) << c.text;
    EXPECT_THAT(std::string(cidr.status().message()), HasSubstr(c.error)) << c.text;
  }
}

struct CoverCase {
  const char* outer;
  const char* inner;
  bool covers;
};

TEST(CidrTest, CoversMeansEveryAddressIsInside) {
  const CoverCase cases[] = {
      {"0.0.0.0/0", "10.0.0.0/8", true},   {"10.0.0.0/8", "10.1.0.0/16", true},
      {"10.0.0.0/8", "10.0.0.0/8", true},  {"10.1.0.0/16", "10.0.0.0/8", false},
      {"10.0.0.0/8", "11.0.0.0/8", false}, {"0.0.0.0/0", "::/0", false},
      {"::/0", "fc00::/7", true},          {"fc00::/7", "fd00::/8", true},
      {"fd00::/8", "fc00::/7", false},     {"192.168.0.0/16", "192.168.255.255/32", true},
  };
  for (const CoverCase& c : cases) {
    EXPECT_EQ(Cidr::Parse(c.outer)->Covers(*Cidr::Parse(c.inner)), c.covers)
        << c.outer << " covers " << c.inner;
  }
}

}  // namespace
}  // namespace lazaret::vocab
