#include "clients/lazaret/net/args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazaret::cli::net {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Error(const absl::Status& s) { return std::string(s.message()); }

TEST(ParseDurationTest, SecondsMinutesHoursWithinAWeek) {
  EXPECT_EQ(*ParseDuration("30s"), 30u);
  EXPECT_EQ(*ParseDuration("10m"), 600u);
  EXPECT_EQ(*ParseDuration("2h"), 7200u);
  EXPECT_EQ(*ParseDuration("168h"), 604800u);
  EXPECT_EQ(*ParseDuration("10080m"), 604800u);
  for (const char* bad : {"", "s", "30", "30x", "-5m", "+5m", "5 m", "1.5h", "5M", "0s", "169h",
                          "99999999999h", "1d", "m5"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
  EXPECT_THAT(Error(ParseDuration("30").status()), HasSubstr("30s, 10m, 2h"));
  EXPECT_THAT(Error(ParseDuration("0m").status()), HasSubstr("leave --for out"));
  EXPECT_THAT(Error(ParseDuration("200h").status()), HasSubstr("lazaret net reload"));
}

TEST(ParseHostPortTest, NamesAddressesAndBracketedIpv6) {
  absl::StatusOr<HostPort> a = ParseHostPort("API.Example.com:443");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "api.example.com");
  EXPECT_EQ(a->port, 443u);
  a = ParseHostPort("10.1.2.3:22");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "10.1.2.3");
  a = ParseHostPort("[2001:db8::1]:8080");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "2001:db8::1");
  EXPECT_EQ(a->port, 8080u);
  a = ParseHostPort("[::ffff:10.0.0.1]:1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "::ffff:10.0.0.1");
}

TEST(ParseHostPortTest, RefusalsSayHowToWriteIt) {
  EXPECT_THAT(Error(ParseHostPort("example.com").status()), HasSubstr("example.com:443"));
  EXPECT_THAT(Error(ParseHostPort("2001:db8::1:443").status()), HasSubstr("[2001:db8::1]:443"));
  EXPECT_THAT(Error(ParseHostPort("[10.0.0.1]:80").status()), HasSubstr("not an IPv6 address"));
  EXPECT_THAT(Error(ParseHostPort("[2001:db8::1]443").status()), HasSubstr("[IPv6]:PORT"));
  EXPECT_THAT(Error(ParseHostPort("*.example.com:443").status()), HasSubstr("test one name"));
  for (const char* bad : {"a.com:0", "a.com:65536", "a.com:", "a.com:+1", "a.com:0x10", ":80",
                          "a_b.com:80", "localhost:80", "[]:80", "a.com:80:90"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
}

TEST(ParseChangeTargetTest, CidrsAreCanonicalisedNamesValidated) {
  absl::StatusOr<ChangeTarget> t = ParseChangeTarget("10.1.2.0/24");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cidr, "10.1.2.0/24");
  EXPECT_EQ(t->name, "");
  t = ParseChangeTarget("FD00:0001::/64");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cidr, "fd00:1::/64");
  t = ParseChangeTarget("*.Example.COM.");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "*.example.com");
  EXPECT_EQ(t->cidr, "");
}

TEST(ParseChangeTargetTest, RefusalsCarryAHint) {
  EXPECT_THAT(Error(ParseChangeTarget("10.1.2.3").status()), HasSubstr("10.1.2.3/32"));
  EXPECT_THAT(Error(ParseChangeTarget("10.1.2.3/8").status()), HasSubstr("10.0.0.0/8"));
  EXPECT_THAT(Error(ParseChangeTarget("10.1.2/24").status()), HasSubstr("a CIDR as in"));
  EXPECT_THAT(Error(ParseChangeTarget("*.com").status()), HasSubstr("top-level"));
  EXPECT_THAT(Error(ParseChangeTarget("a.*.com").status()), HasSubstr("first label"));
  EXPECT_THAT(Error(ParseChangeTarget("localhost").status()), HasSubstr("two labels"));
  EXPECT_THAT(Error(ParseChangeTarget("b\xc3\xa4r.de").status()), HasSubstr("xn--"));
  EXPECT_THAT(Error(ParseChangeTarget("x.\x1b[31m").status()), Not(HasSubstr("\x1b")));
  for (const char* bad : {"", "*", "-a.com", "a-.com", "a..com", "_srv.a.com", "a.com/"}) {
    EXPECT_FALSE(ParseChangeTarget(bad).ok()) << bad;
  }
}

TEST(ParseNetArgsTest, EveryVerbWithItsOptions) {
  absl::StatusOr<NetArgs> a = ParseNetArgs({"show"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, NetVerb::kShow);
  EXPECT_EQ(a->session, "");
  a = ParseNetArgs({"show", "--json", "0123"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->json);
  EXPECT_EQ(a->session, "0123");
  a = ParseNetArgs({"test", "0123456789ab", "[::1]:53", "--udp"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, NetVerb::kTest);
  EXPECT_TRUE(a->udp);
  EXPECT_EQ(a->destination.host, "::1");
  EXPECT_EQ(a->destination.port, 53u);
  a = ParseNetArgs({"log", "0123456789ab", "--requests", "--json"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->requests);
  EXPECT_TRUE(a->json);
  EXPECT_FALSE(ParseNetArgs({"show", "0123456789ab", "--requests"}).ok());
  a = ParseNetArgs({"log", "0123456789ab", "--follow"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->follow);
  a = ParseNetArgs({"reload", "01"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, NetVerb::kReload);
  a = ParseNetArgs({"allow", "0123456789ab", "10.9.0.0/16", "--for", "10m"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, NetVerb::kAllow);
  EXPECT_EQ(a->target.cidr, "10.9.0.0/16");
  EXPECT_EQ(a->duration_seconds, 600u);
  a = ParseNetArgs({"deny", "0123456789ab", "--for=30s", "api.example.com"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, NetVerb::kDeny);
  EXPECT_EQ(a->target.name, "api.example.com");
  EXPECT_EQ(a->duration_seconds, 30u);
  a = ParseNetArgs({"allow", "0123456789ab", "api.example.com"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->duration_seconds, 0u);
  for (const std::vector<std::string>& help :
       std::vector<std::vector<std::string>>{{"help"}, {"--help"}, {"show", "-h"}}) {
    a = ParseNetArgs(help);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->verb, NetVerb::kHelp);
  }
}

TEST(ParseNetArgsTest, MistakesAreNamed) {
  EXPECT_THAT(Error(ParseNetArgs({}).status()), HasSubstr("which net command"));
  EXPECT_THAT(Error(ParseNetArgs({"shwo"}).status()), HasSubstr("unknown net command 'shwo'"));
  EXPECT_THAT(Error(ParseNetArgs({"test", "0123"}).status()), HasSubstr("SESSION HOST:PORT"));
  EXPECT_THAT(Error(ParseNetArgs({"log"}).status()), HasSubstr("one SESSION"));
  EXPECT_THAT(Error(ParseNetArgs({"show", "a", "b"}).status()), HasSubstr("unexpected 'b'"));
  EXPECT_THAT(Error(ParseNetArgs({"show", "XYZ"}).status()), HasSubstr("not a session id"));
  EXPECT_THAT(Error(ParseNetArgs({"show", "0123456789abc"}).status()),
              HasSubstr("not a session id"));
  EXPECT_THAT(Error(ParseNetArgs({"log", "01", "--udp"}).status()), HasSubstr("no option"));
  EXPECT_THAT(Error(ParseNetArgs({"reload", "01", "--for", "1m"}).status()),
              HasSubstr("no option '--for'"));
  EXPECT_THAT(Error(ParseNetArgs({"allow", "01", "a.com", "--for"}).status()),
              HasSubstr("--for needs a DURATION"));
  EXPECT_THAT(Error(ParseNetArgs({"allow", "01", "a.com", "--for", "1m", "--for=2m"}).status()),
              HasSubstr("twice"));
  EXPECT_THAT(Error(ParseNetArgs({"allow", "01", "10.0.0.1"}).status()), HasSubstr("/32"));
}

}  // namespace
}  // namespace lazaret::cli::net
