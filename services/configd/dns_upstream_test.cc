#include "services/configd/dns_upstream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace lazaret::config {
namespace {

using ::testing::HasSubstr;

TEST(DnsUpstreamTest, AcceptsAddressLiteralsWithAnOptionalPort) {
  const std::pair<const char*, const char*> cases[] = {
      {"192.0.2.53", "192.0.2.53:53"},
      {"192.0.2.53:5353", "192.0.2.53:5353"},
      {"127.0.0.53", "127.0.0.53:53"},
      {"2001:db8::53", "[2001:db8::53]:53"},
      {"[2001:db8::53]", "[2001:db8::53]:53"},
      {"[2001:db8::53]:53", "[2001:db8::53]:53"},
      {"[2001:DB8:0:0::53]:65535", "[2001:db8::53]:65535"},
      {"::1", "[::1]:53"},
      {"[::ffff:192.0.2.1]:1", "[::ffff:192.0.2.1]:1"},
  };
  for (const auto& [text, canonical] : cases) {
    absl::StatusOr<std::string> u = CheckDnsUpstream(text);
    ASSERT_TRUE(u.ok()) << text << ": " << u.status();
    EXPECT_EQ(*u, canonical) << text;
  }
}

TEST(DnsUpstreamTest, RefusesNamesAndMalformedAddresses) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty resolver address"},
      {"dns.google", "resolvers are given by address, not by name"},
      {"dns.google:53", "not by name"},
      {"face.cafe", "not by name"},
      {"192.0.2.53 ", "is not an address with an optional port"},
      {" 192.0.2.53", "is not an address"},
      {"192.0.2.053", "is not a valid IPv4 address"},
      {"192.0.2", "is not a valid IPv4 address"},
      {"192.0.2.53:", "has an empty port"},
      {"192.0.2.53:0", "invalid port"},
      {"192.0.2.53:053", "invalid port"},
      {"192.0.2.53:65536", "invalid port"},
      {"192.0.2.53:+53", "is not an address"},
      {"192.0.2.53/32", "is not an address"},
      {"2001:db8::53:5353:1:2:3:4",
       "is not a valid IPv6 address (with a port, write it in "
       "brackets"},
      {"[2001:db8::53", "no closing ']'"},
      {"[2001:db8::53]53", "only \":port\" may follow"},
      {"[2001:db8::53]:", "has an empty port"},
      {"[192.0.2.53]:53", "is not a valid IPv6 address"},
      {"2001:db8::53]", "a ']' without '['"},
      {"fe80::1%eth0", "is not an address"},
      {"0.0.0.0", "the unspecified address"},
      {"[::]:53", "the unspecified address"},
      {"224.0.0.251:5353", "a multicast address"},
      {"ff02::fb", "a multicast address"},
      {"255.255.255.255", "the broadcast address"},
  };
  for (const auto& [text, why] : cases) {
    absl::StatusOr<std::string> u = CheckDnsUpstream(text);
    ASSERT_FALSE(u.ok()) << "\"" << text << "\" -> " << *u;
    EXPECT_THAT(u.status().message(), HasSubstr(why)) << text;
  }
}

}  // namespace
}  // namespace lazaret::config
