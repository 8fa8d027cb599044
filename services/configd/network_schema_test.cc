// The [network] keys and the network keys of a profile as one layer reads
// them: names, resolvers, a profile's own default_allow, and every bad
// input with its position and fix.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/configd/schema.h"
#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using testing::AllErrors;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Parsed;
using testing::ParseText;

std::vector<std::string> SettingValues(const SettingList<std::string>& l) {
  std::vector<std::string> out;
  for (const Setting<std::string>& s : l.value) out.push_back(s.value);
  return out;
}

TEST(NetworkSchemaTest, ReadsNamesResolversAndAProfilesDefaultAllow) {
  Parsed p = ParseText(R"(
[network]
default_allow_domains = [
  "Registry.NPMjs.org.",
  "*.example.org",
]
dns_upstream = ["192.0.2.53", "192.0.2.54:5353", "[2001:db8::53]:53", "2001:db8::54"]
[profiles.names-only]
image = "localhost/x:1"
default_allow = []
allow_domains = ["api.example.com", "*.githubusercontent.com"]
[profiles.narrow]
image = "localhost/x:1"
default_allow = ["198.51.100.0/24"]
)");
  ASSERT_FALSE(p.diags.has_errors()) << AllErrors(p.diags);
  EXPECT_THAT(p.diags.warnings(), IsEmpty());
  const LayerConfig& l = p.layer;
  ASSERT_TRUE(l.default_allow_domains);
  EXPECT_THAT(SettingValues(*l.default_allow_domains),
              ElementsAre("registry.npmjs.org", "*.example.org"));
  // Each entry keeps the line of its array element.
  EXPECT_EQ(l.default_allow_domains->origin.line, 3u);
  EXPECT_EQ(l.default_allow_domains->value[0].origin.line, 4u);
  EXPECT_EQ(l.default_allow_domains->value[1].origin.line, 5u);
  EXPECT_EQ(l.default_allow_domains->value[1].origin.key_path, "network.default_allow_domains[1]");
  EXPECT_EQ(l.default_allow_domains->value[1].origin.file, testing::kUserConfigFile);
  EXPECT_EQ(l.default_allow_domains->value[1].origin.layer, Layer::kUser);
  ASSERT_TRUE(l.dns_upstream);
  EXPECT_THAT(
      SettingValues(*l.dns_upstream),
      ElementsAre("192.0.2.53:53", "192.0.2.54:5353", "[2001:db8::53]:53", "[2001:db8::54]:53"));
  EXPECT_EQ(l.dns_upstream->origin.key_path, "network.dns_upstream");
  const ProfileLayer& names = l.profiles.at("names-only");
  ASSERT_TRUE(names.default_allow);
  EXPECT_THAT(names.default_allow->value, IsEmpty());
  EXPECT_EQ(names.default_allow->origin.key_path, "profiles.names-only.default_allow");
  ASSERT_TRUE(names.allow_domains);
  EXPECT_THAT(SettingValues(*names.allow_domains),
              ElementsAre("api.example.com", "*.githubusercontent.com"));
  EXPECT_EQ(names.allow_domains->value[1].origin.key_path, "profiles.names-only.allow_domains[1]");
  EXPECT_EQ(names.allow_domains->value[1].origin.line, 11u);
  const ProfileLayer& narrow = l.profiles.at("narrow");
  ASSERT_EQ(narrow.default_allow->value.size(), 1u);
  EXPECT_EQ(narrow.default_allow->value[0].value.ToString(), "198.51.100.0/24");
  EXPECT_FALSE(narrow.allow_domains);
}

struct ErrorCase {
  const char* name;
  const char* text;
  const char* expected;  // substring of the formatted errors
};

TEST(NetworkSchemaTest, BadValuesAreErrorsWithPositionAndFix) {
  const ErrorCase cases[] = {
      {"wildcard tld", "[network]\ndefault_allow_domains = [\"*.com\"]\n",
       "config.toml:2:26: network.default_allow_domains[0]: \"*.com\" is not a valid name: a "
       "wildcard needs a name of at least two labels below it"},
      {"name hint", "[network]\ndefault_allow_domains = [\"a..b\"]\n",
       "  fix: write a host name such as \"api.example.com\", or \"*.example.com\" for every name "
       "below example.com"},
      {"ip as name",
       "[profiles.ab]\nimage = \"localhost/x:1\"\nallow_domains = [\"ok.example\", "
       "\"10.1.2.3\"]\n",
       "config.toml:3:32: profiles.ab.allow_domains[1]: \"10.1.2.3\" is not a valid name: it ends "
       "in a numeric label"},
      {"underscore",
       "[profiles.ab]\nimage = \"localhost/x:1\"\nallow_domains = [\"_dmarc.example.com\"]\n",
       "profiles.ab.allow_domains[0]: \"_dmarc.example.com\" is not a valid name: '_' is not "
       "allowed"},
      {"star inside",
       "[profiles.ab]\nimage = \"localhost/x:1\"\nallow_domains = [\"api.*.example.com\"]\n",
       "'*' is only allowed as the whole first label"},
      {"star alone", "[network]\ndefault_allow_domains = [\"*\"]\n",
       "\"*\" alone would match every name"},
      {"domains not array", "[profiles.ab]\nimage = \"localhost/x:1\"\nallow_domains = \"a.com\"\n",
       "profiles.ab.allow_domains: expected an array, found a string"},
      {"domain not string", "[network]\ndefault_allow_domains = [\"a.com\", 1]\n",
       "network.default_allow_domains[1]: expected a string, found an integer"},
      {"upstream name", "[network]\ndns_upstream = [\"dns.google\"]\n",
       "config.toml:2:17: network.dns_upstream[0]: \"dns.google\" is not an address (resolvers "
       "are given by address, not by name)"},
      {"upstream hint", "[network]\ndns_upstream = [\"192.0.2.53:99999\"]\n",
       "  fix: write a resolver's address with an optional port, e.g. \"192.0.2.53\", "
       "\"192.0.2.53:5353\" or \"[2001:db8::53]:53\""},
      {"upstream v6 port",
       "[network]\ndns_upstream = [\"2001:db8::53:53\", \"2001:db8::1:2:3:4:5:53\"]\n",
       "network.dns_upstream[1]: \"2001:db8::1:2:3:4:5:53\" is not a valid IPv6 address (with a "
       "port, write it in brackets"},
      {"upstream twice", "[network]\ndns_upstream = [\"192.0.2.53\", \"192.0.2.53:53\"]\n",
       "network.dns_upstream[1]: \"192.0.2.53:53\" is listed twice (as \"192.0.2.53:53\")"},
      {"upstream not array", "[network]\ndns_upstream = \"192.0.2.53\"\n",
       "network.dns_upstream: expected an array, found a string"},
      {"profile default_allow cidr",
       "[profiles.ab]\nimage = \"localhost/x:1\"\ndefault_allow = [\"10.1.2.3/8\"]\n",
       "config.toml:3:18: profiles.ab.default_allow[0]: \"10.1.2.3/8\" has host bits set; did you "
       "mean \"10.0.0.0/8\"?"},
      {"allow_domains in network", "[network]\nallow_domains = [\"a.com\"]\n",
       "network.allow_domains: unknown key 'allow_domains'\n  fix: 'allow_domains' belongs in "
       "[profiles.<name>]"},
      {"default_allow_domains in profile",
       "[profiles.ab]\nimage = \"localhost/x:1\"\ndefault_allow_domains = [\"a.com\"]\n",
       "'default_allow_domains' belongs in [network]"},
      {"dns_upstream in profile",
       "[profiles.ab]\nimage = \"localhost/x:1\"\ndns_upstream = [\"192.0.2.53\"]\n",
       "'dns_upstream' belongs in [network]"},
      {"typo", "[network]\ndns_upstreams = []\n", "did you mean 'dns_upstream'?"},
      {"typo domains", "[profiles.ab]\nimage = \"localhost/x:1\"\nallow_domain = []\n",
       "did you mean 'allow_domains'?"},
  };
  for (const ErrorCase& c : cases) {
    Parsed p = ParseText(c.text);
    EXPECT_THAT(AllErrors(p.diags), HasSubstr(c.expected)) << c.name;
    for (const Diagnostic& d : p.diags.errors()) {
      EXPECT_EQ(d.file, testing::kUserConfigFile) << c.name;
      EXPECT_GT(d.line, 0u) << c.name << ": " << FormatDiagnostic(d);
    }
  }
}

TEST(NetworkSchemaTest, OneBadEntryRefusesTheWholeList) {
  Parsed p = ParseText(
      "[network]\ndefault_allow_domains = [\"a.example\", \"*.com\", \"b.example\"]\n"
      "dns_upstream = [\"192.0.2.53\", \"dns.google\"]\n");
  EXPECT_EQ(p.diags.errors().size(), 2u) << AllErrors(p.diags);
  EXPECT_FALSE(p.layer.default_allow_domains);
  EXPECT_FALSE(p.layer.dns_upstream);
}

TEST(NetworkSchemaTest, EgressValuesParsedAndBadOnesNamed) {
  Parsed p = ParseText(R"(
[network]
egress = "names"
ask_timeout = 30
ask_unattended = "wait"
trust_host_ca = true
[profiles.dev]
image = "localhost/x:1"
egress = "open"
ports = ["3000", "8080:3000", "127.0.0.1:1455", "[::1]:3001", "0.0.0.0:9000:9000"]
)");
  ASSERT_FALSE(p.diags.has_errors()) << AllErrors(p.diags);
  ASSERT_TRUE(p.layer.net.egress.has_value());
  EXPECT_EQ(p.layer.net.egress->value, EgressMode::kNames);
  EXPECT_EQ(p.layer.net.egress->origin.line, 3u);
  EXPECT_EQ(p.layer.net.ask_timeout->value, 30u);
  EXPECT_TRUE(p.layer.net.ask_unattended_wait->value);
  EXPECT_TRUE(p.layer.net.trust_host_ca->value);
  const ProfileLayer& dev = p.layer.profiles.at("dev");
  EXPECT_EQ(dev.net.egress->value, EgressMode::kOpen);
  std::vector<std::string> ports;
  for (const Setting<vocab::PortSpec>& f : dev.ports->value)
    ports.push_back(vocab::FormatPortSpec(f.value));
  EXPECT_THAT(ports, ElementsAre("3000:3000", "8080:3000", "127.0.0.1:1455:1455", "[::1]:3001:3001",
                                 "0.0.0.0:9000:9000"));

  const struct {
    const char* text;
    const char* error;
  } bad[] = {
      {"[network]\negress = \"closed\"\n",
       "config.toml:2:10: network.egress: \"closed\" is not an egress mode"},
      {"[network]\negress = true\n", "network.egress"},
      {"[network]\nask_timeout = 4\n", "network.ask_timeout"},
      {"[network]\nask_timeout = 601\n", "network.ask_timeout"},
      {"[network]\nask_unattended = \"allow\"\n", "\"allow\" is not a choice here"},
      {"[network]\ntrust_host_ca = \"yes\"\n", "network.trust_host_ca"},
      {"[network]\nports = [\"3000\"]\n", "unknown key 'ports'"},
      {"[profiles.x1]\nimage = \"localhost/x:1\"\nports = [\"80\"]\n",
       "host port 80 is below 1024"},
      {"[profiles.x1]\nimage = \"localhost/x:1\"\nports = [\"3000:0\"]\n",
       "sandbox port 0 is not a port number"},
      {"[profiles.x1]\nimage = \"localhost/x:1\"\nports = [\"::1:3000\"]\n",
       "write an IPv6 address in brackets"},
      {"[profiles.x1]\nimage = \"localhost/x:1\"\nports = [\"localhost:3000\"]\n",
       "host port \"localhost\" is not a port number"},
      {"[profiles.x1]\nimage = \"localhost/x:1\"\nports = [\"999.1.1.1:3000\"]\n",
       "is not an IPv4 address"},
      {"[profiles.x1]\nimage = \"localhost/x:1\"\nports = [\"3000\", \"3000:4000\"]\n",
       "host port 3000 is forwarded twice"},
      {"[profiles.x1]\nimage = \"localhost/x:1\"\nports = [3000]\n", "profiles.x1.ports[0]"},
  };
  for (const auto& b : bad) {
    Parsed q = ParseText(b.text);
    EXPECT_THAT(AllErrors(q.diags), HasSubstr(b.error)) << b.text;
  }
}

}  // namespace
}  // namespace lazaret::config
