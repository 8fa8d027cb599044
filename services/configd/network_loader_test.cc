// The network part of a resolved profile through the whole pipeline (every
// entry with its layer, file and line; order and de-duplication) and the
// workspace clamp on the network keys: names, a profile's default_allow,
// dns_upstream.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/configd/loader.h"
#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using ::testing::ElementsAre;
using testing::Errors;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Load;
using testing::Scratch;
using testing::SourceOf;

// "value@layer:line" for each entry, so order, de-duplication and sources
// are checked at once.
std::string At(const Origin& o) {
  return absl::StrCat(LayerName(o.layer), ":", o.line, ":", o.key_path);
}

std::vector<std::string> Entries(const std::vector<Setting<vocab::Cidr>>& l) {
  std::vector<std::string> out;
  for (const Setting<vocab::Cidr>& e : l)
    out.push_back(absl::StrCat(e.value.ToString(), "@", At(e.origin)));
  return out;
}

std::vector<std::string> Entries(const std::vector<Setting<std::string>>& l) {
  std::vector<std::string> out;
  for (const Setting<std::string>& e : l) out.push_back(absl::StrCat(e.value, "@", At(e.origin)));
  return out;
}

constexpr char kNetworkUser[] = R"(
[network]
default_allow = ["192.0.2.0/24", "2001:db8::/32"]
default_allow_domains = [
  "pypi.org",
  "*.npmjs.org",
]
dns_upstream = ["192.0.2.53", "[2001:db8::53]:5353"]
egress = "open"
[profiles.ab]
image = "localhost/x:1"
allow_egress = ["198.51.100.0/24", "192.0.2.0/24", "10.20.0.0/16"]
allow_domains = ["api.example.com", "PYPI.org.", "*.example.net"]
[profiles.names]
image = "localhost/x:1"
default_allow = []
allow_domains = ["github.com"]
[profiles.own]
image = "localhost/x:1"
default_allow = ["203.0.113.0/24"]
)";

TEST(NetworkLoaderTest, AllowIsTheDefaultAllowThenAllowEgressEachWithItsLine) {
  Scratch s;
  LoadedConfig c = Load(s, kNetworkUser);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> ab = c.Profile("ab");
  ASSERT_TRUE(ab.ok()) << ab.status();
  // 192.0.2.0/24 again in allow_egress keeps its first place and line.
  EXPECT_THAT(Entries(ab->allow), ElementsAre("192.0.2.0/24@user:3:network.default_allow[0]",
                                              "2001:db8::/32@user:3:network.default_allow[1]",
                                              "198.51.100.0/24@user:12:profiles.ab.allow_egress[0]",
                                              "10.20.0.0/16@user:12:profiles.ab.allow_egress[2]"));
  EXPECT_THAT(Entries(ab->allow_domains),
              ElementsAre("pypi.org@user:5:network.default_allow_domains[0]",
                          "*.npmjs.org@user:6:network.default_allow_domains[1]",
                          "api.example.com@user:13:profiles.ab.allow_domains[0]",
                          "*.example.net@user:13:profiles.ab.allow_domains[2]"));
  EXPECT_THAT(ab->dns_upstream, ElementsAre("192.0.2.53:53", "[2001:db8::53]:5353"));
  ASSERT_FALSE(ab->deny.empty());
  for (const Setting<vocab::Cidr>& d : ab->deny) {
    EXPECT_EQ(d.origin.layer, Layer::kEmbeddedDefault);
    EXPECT_EQ(d.origin.file, kEmbeddedFileName);
    EXPECT_GT(d.origin.line, 0u);
    EXPECT_THAT(d.origin.key_path, HasSubstr("network.default_deny["));
  }
  for (const Setting<vocab::Cidr>& a : ab->allow) {
    EXPECT_EQ(a.origin.file, s.Path("home/.config/lazaret/config.toml"));
  }
  EXPECT_EQ(SourceOf(*ab, "network.default_allow")->layer, Layer::kUser);
  EXPECT_EQ(SourceOf(*ab, "network.default_allow_domains")->layer, Layer::kUser);
  EXPECT_EQ(SourceOf(*ab, "profiles.ab.allow_domains")->layer, Layer::kUser);
  EXPECT_EQ(SourceOf(*ab, "network.dns_upstream")->layer, Layer::kUser);
}

TEST(NetworkLoaderTest, AProfilesDefaultAllowReplacesTheNetworkOne) {
  Scratch s;
  LoadedConfig c = Load(s, kNetworkUser);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> names = c.Profile("names");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(names->allow, IsEmpty());  // names only
  EXPECT_THAT(Entries(names->allow_domains),
              ElementsAre("pypi.org@user:5:network.default_allow_domains[0]",
                          "*.npmjs.org@user:6:network.default_allow_domains[1]",
                          "github.com@user:17:profiles.names.allow_domains[0]"));
  EXPECT_NE(SourceOf(*names, "profiles.names.default_allow"), nullptr);
  EXPECT_EQ(SourceOf(*names, "network.default_allow"), nullptr);
  EXPECT_FALSE(names->deny.empty());  // the deny list still applies
  absl::StatusOr<ResolvedProfile> own = c.Profile("own");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_THAT(Entries(own->allow),
              ElementsAre("203.0.113.0/24@user:20:profiles.own.default_allow[0]"));
}

TEST(NetworkLoaderTest, DefaultProfileIsAskWithTheBuiltInList) {
  Scratch s;
  LoadedConfig c = Load(s, "");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> p = c.Profile("");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->egress.value, EgressMode::kAsk);
  EXPECT_EQ(p->egress.origin.layer, Layer::kEmbeddedDefault);
  EXPECT_EQ(p->ask_timeout_seconds, 120u);
  EXPECT_FALSE(p->ask_unattended_wait);
  EXPECT_FALSE(p->trust_host_ca);
  EXPECT_THAT(p->ports, IsEmpty());
  // Names decide: the built-in /0 allows stay out, and only the developer
  // hosts are listed.
  EXPECT_THAT(p->allow, IsEmpty());
  std::vector<std::string> names;
  for (const Setting<std::string>& d : p->allow_domains) names.push_back(d.value);
  EXPECT_THAT(names,
              ElementsAre("deb.debian.org", "security.debian.org", "registry.npmjs.org", "pypi.org",
                          "files.pythonhosted.org", "crates.io", "index.crates.io",
                          "static.crates.io", "proxy.golang.org", "sum.golang.org", "github.com",
                          "api.github.com", "codeload.github.com", "*.githubusercontent.com",
                          "api.anthropic.com", "api.openai.com", "auth.openai.com", "chatgpt.com",
                          "generativelanguage.googleapis.com", "oauth2.googleapis.com"));
  EXPECT_THAT(p->dns_upstream, IsEmpty());
  EXPECT_EQ(SourceOf(*p, "network.egress")->layer, Layer::kEmbeddedDefault);
  EXPECT_EQ(SourceOf(*p, "network.default_allow"), nullptr);
}

TEST(NetworkLoaderTest, OpenEgressKeepsTheSlashZeroAllows) {
  Scratch s;
  LoadedConfig c = Load(s, "[network]\negress = \"open\"\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> p = c.Profile("");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->egress.value, EgressMode::kOpen);
  EXPECT_EQ(p->egress.origin.layer, Layer::kUser);
  std::vector<std::string> allow;
  for (const Setting<vocab::Cidr>& a : p->allow) allow.push_back(a.value.ToString());
  EXPECT_THAT(allow, ElementsAre("0.0.0.0/0", "::/0"));
}

TEST(NetworkLoaderTest, NamesAndAskDropDefaultAllowKeepAllowEgress) {
  Scratch s;
  LoadedConfig c = Load(s, R"(
[network]
default_allow = ["192.0.2.0/24"]
[profiles.nm]
image = "localhost/x:1"
egress = "names"
allow_egress = ["198.51.100.0/24"]
[profiles.ak]
image = "localhost/x:1"
allow_egress = ["203.0.113.0/24"]
[profiles.op]
image = "localhost/x:1"
egress = "open"
allow_egress = ["203.0.113.0/24"]
)");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> nm = c.Profile("nm");
  ASSERT_TRUE(nm.ok());
  EXPECT_EQ(nm->egress.value, EgressMode::kNames);
  EXPECT_THAT(Entries(nm->allow),
              ElementsAre("198.51.100.0/24@user:7:profiles.nm.allow_egress[0]"));
  absl::StatusOr<ResolvedProfile> ak = c.Profile("ak");
  ASSERT_TRUE(ak.ok());
  EXPECT_EQ(ak->egress.value, EgressMode::kAsk);
  EXPECT_THAT(Entries(ak->allow),
              ElementsAre("203.0.113.0/24@user:10:profiles.ak.allow_egress[0]"));
  absl::StatusOr<ResolvedProfile> op = c.Profile("op");
  ASSERT_TRUE(op.ok());
  EXPECT_THAT(Entries(op->allow),
              ElementsAre("192.0.2.0/24@user:3:network.default_allow[0]",
                          "203.0.113.0/24@user:14:profiles.op.allow_egress[0]"));
  // The user's default_allow does nothing for nm, ak and the built-in
  // default profile (ask): config check says so for each.
  size_t ignored = 0;
  for (const Diagnostic& d : c.diagnostics.warnings()) {
    if (absl::StrContains(d.message, "default_allow is ignored when egress is not open")) {
      ++ignored;
    }
  }
  EXPECT_EQ(ignored, 3u);
}

TEST(NetworkLoaderTest, EgressSettingsAProfileOverridesAndPortsResolve) {
  Scratch s;
  LoadedConfig c = Load(s, R"(
[network]
ask_timeout = 30
ask_unattended = "wait"
trust_host_ca = true
[profiles.dev]
image = "localhost/x:1"
ask_timeout = 300
trust_host_ca = false
ports = ["3000", "8080:3000", "127.0.0.1:1455", "[::1]:5173:5173"]
)");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> dev = c.Profile("dev");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->ask_timeout_seconds, 300u);
  EXPECT_TRUE(dev->ask_unattended_wait);
  EXPECT_FALSE(dev->trust_host_ca);
  std::vector<std::string> ports;
  for (const Setting<vocab::PortSpec>& f : dev->ports)
    ports.push_back(vocab::FormatPortSpec(f.value));
  EXPECT_THAT(ports,
              ElementsAre("3000:3000", "8080:3000", "127.0.0.1:1455:1455", "[::1]:5173:5173"));
  EXPECT_EQ(SourceOf(*dev, "profiles.dev.ask_timeout")->layer, Layer::kUser);
  EXPECT_EQ(SourceOf(*dev, "network.ask_unattended")->layer, Layer::kUser);
  absl::StatusOr<ResolvedProfile> def = c.Profile("default");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->ask_timeout_seconds, 30u);
  EXPECT_TRUE(def->trust_host_ca);
}

TEST(NetworkLoaderTest, EachEntryNamesTheLayerThatWroteIt) {
  Scratch s;
  const std::string workspace = "[profiles.ab]\nallow_domains = [\"api.example.com\"]\n";
  const std::string explicit_config =
      "[network]\ndefault_allow_domains = [\"files.example.com\"]\n";
  LoadedConfig c = Load(s, kNetworkUser, workspace, explicit_config);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> ab = c.Profile("ab");
  ASSERT_TRUE(ab.ok());
  ASSERT_EQ(ab->allow_domains.size(), 2u);
  EXPECT_EQ(ab->allow_domains[0].value, "files.example.com");
  EXPECT_EQ(ab->allow_domains[0].origin.layer, Layer::kExplicit);
  EXPECT_EQ(ab->allow_domains[0].origin.file, s.Path("explicit.toml"));
  EXPECT_EQ(ab->allow_domains[0].origin.line, 2u);
  EXPECT_EQ(ab->allow_domains[1].value, "api.example.com");
  EXPECT_EQ(ab->allow_domains[1].origin.layer, Layer::kWorkspace);
  EXPECT_EQ(ab->allow_domains[1].origin.file, s.workspace() + "/lazaret.toml");
  EXPECT_EQ(ab->allow_domains[1].origin.line, 2u);
}

struct NetworkNarrowCase {
  const char* name;
  const char* workspace;
  const char* refusal;  // substring of the errors; null: accepted
};

TEST(NetworkLoaderTest, AnUntrustedWorkspaceMayOnlyNarrowTheNetworkKeys) {
  const NetworkNarrowCase cases[] = {
      // Names.
      {"a name of the profile", "[profiles.ab]\nallow_domains = [\"api.example.com\"]\n", nullptr},
      {"fewer names", "[profiles.ab]\nallow_domains = []\n", nullptr},
      {"a name below a wildcard of the profile",
       "[profiles.ab]\nallow_domains = [\"x.example.net\", \"*.y.example.net\"]\n", nullptr},
      {"a network-wide name in the profile", "[profiles.ab]\nallow_domains = [\"pypi.org\"]\n",
       nullptr},
      {"a name below a network-wide wildcard",
       "[profiles.names]\nallow_domains = [\"registry.npmjs.org\"]\n", nullptr},
      {"a new name", "[profiles.ab]\nallow_domains = [\"evil.example\"]\n",
       "lazaret.toml:2:18: profiles.ab.allow_domains[0]: allows the name \"evil.example\", which "
       "no name of profiles.ab.allow_domains or network.default_allow_domains in your "
       "configuration covers"},
      {"a wildcard's base", "[profiles.ab]\nallow_domains = [\"example.net\"]\n",
       "allows the name \"example.net\""},
      {"a wildcard over a name", "[profiles.names]\nallow_domains = [\"*.github.com\"]\n",
       "allows the name \"*.github.com\""},
      {"a broader wildcard", "[profiles.ab]\nallow_domains = [\"*.net\"]\n", "is not a valid name"},
      {"another profile's name", "[profiles.ab]\nallow_domains = [\"github.com\"]\n",
       "allows the name \"github.com\""},
      {"network names narrowed", "[network]\ndefault_allow_domains = [\"pypi.org\"]\n", nullptr},
      {"network names emptied", "[network]\ndefault_allow_domains = []\n", nullptr},
      {"network name every profile has",
       "[network]\ndefault_allow_domains = [\"pypi.org\", \"x.npmjs.org\"]\n", nullptr},
      {"network name one profile has", "[network]\ndefault_allow_domains = [\"github.com\"]\n",
       "network.default_allow_domains[0]: allows the name \"github.com\", which no name of "
       "network.default_allow_domains in your configuration covers, nor the allow_domains of "
       "profile ab, default, own"},
      // A profile's default_allow.
      {"profile default_allow inside the network one",
       "[profiles.ab]\ndefault_allow = [\"192.0.2.128/25\"]\n", nullptr},
      {"profile default_allow emptied", "[profiles.ab]\ndefault_allow = []\n", nullptr},
      {"profile default_allow wider", "[profiles.ab]\ndefault_allow = [\"0.0.0.0/0\"]\n",
       "lazaret.toml:2:18: profiles.ab.default_allow[0]: allows \"0.0.0.0/0\", which is neither an "
       "entry of network.default_allow (this profile's default_allow) in your configuration"},
      {"names-only profile given addresses",
       "[profiles.names]\ndefault_allow = [\"192.0.2.0/24\"]\n",
       "profiles.names.default_allow[0]: allows \"192.0.2.0/24\", which is neither an entry of "
       "profiles.names.default_allow"},
      {"own default_allow narrowed", "[profiles.own]\ndefault_allow = [\"203.0.113.0/25\"]\n",
       nullptr},
      {"own default_allow left for the network one",
       "[profiles.own]\ndefault_allow = [\"192.0.2.0/24\"]\n",
       "profiles.own.default_allow[0]: allows \"192.0.2.0/24\""},
      {"profile default_allow into a denied range",
       "[network]\ndefault_deny = [\"192.0.2.0/28\"]\n[profiles.ab]\ndefault_allow = "
       "[\"192.0.2.0/27\"]\n",
       "allows \"192.0.2.0/27\""},
      // dns_upstream.
      {"dns_upstream identical",
       "[network]\ndns_upstream = [\"192.0.2.53:53\", \"[2001:db8::53]:5353\"]\n", nullptr},
      {"dns_upstream changed", "[network]\ndns_upstream = [\"192.0.2.99\"]\n",
       "lazaret.toml:2:16: network.dns_upstream: sets the resolvers asked for the sandbox's names "
       "to [\"192.0.2.99:53\"]; your configuration uses [\"192.0.2.53:53\", "
       "\"[2001:db8::53]:5353\"]"},
      {"dns_upstream fewer", "[network]\ndns_upstream = [\"192.0.2.53\"]\n",
       "network.dns_upstream: sets the resolvers"},
      {"dns_upstream emptied", "[network]\ndns_upstream = []\n",
       "network.dns_upstream: sets the resolvers"},
  };
  Scratch s;
  for (const NetworkNarrowCase& c : cases) {
    LoadedConfig loaded = Load(s, kNetworkUser, c.workspace);
    if (c.refusal == nullptr) {
      EXPECT_TRUE(loaded.status().ok()) << c.name << "\n" << Errors(loaded);
      continue;
    }
    EXPECT_THAT(Errors(loaded), HasSubstr(c.refusal)) << c.name;
    const bool syntax = std::string(c.refusal).find("is not a valid") != std::string::npos;
    if (syntax) continue;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied) << c.name;
    EXPECT_THAT(Errors(loaded), HasSubstr("lazaret trust " + s.workspace() + "/lazaret.toml"))
        << c.name;
    bool marked = false;
    for (const Diagnostic& d : loaded.diagnostics.errors()) marked |= d.widening;
    EXPECT_TRUE(marked) << c.name;
    // Trusted, the same file may widen.
    LoadedConfig trusted = Load(s, kNetworkUser, c.workspace, "", /*workspace_trusted=*/true);
    EXPECT_TRUE(trusted.status().ok()) << c.name << "\n" << Errors(trusted);
  }
}

TEST(NetworkLoaderTest, WithoutUpstreamsOfYoursAWorkspaceMayNotChooseAny) {
  Scratch s;
  LoadedConfig c = Load(s, "", "[network]\ndns_upstream = [\"192.0.2.53\"]\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Errors(c), HasSubstr("your configuration uses the host's own (/etc/resolv.conf)"));
  // An empty list is the host's own: identical.
  c = Load(s, "", "[network]\ndns_upstream = []\n");
  EXPECT_TRUE(c.status().ok()) << Errors(c);
}

TEST(NetworkLoaderTest, WithoutNamesOfYoursAWorkspaceMayNotAddAny) {
  Scratch s;
  LoadedConfig c = Load(s, "", "[network]\ndefault_allow_domains = [\"example.com\"]\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Errors(c), HasSubstr("allows the name \"example.com\""));
  c = Load(s, "", "[profiles.default]\nallow_domains = [\"example.com\"]\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Errors(c), HasSubstr("profiles.default.allow_domains[0]: allows the name"));
}

constexpr char kEgressUser[] = R"(
[network]
egress = "ask"
ask_timeout = 60
[profiles.op]
image = "localhost/x:1"
egress = "open"
trust_host_ca = true
ask_unattended = "wait"
[profiles.nm]
image = "localhost/x:1"
egress = "names"
)";

// Each case: refused by an untrusted workspace (and accepted once trusted),
// or accepted as a narrowing.
void ExpectNarrowing(const char* user, const std::vector<NetworkNarrowCase>& cases) {
  Scratch s;
  for (const NetworkNarrowCase& c : cases) {
    LoadedConfig loaded = Load(s, user, c.workspace);
    if (c.refusal == nullptr) {
      EXPECT_TRUE(loaded.status().ok()) << c.name << "\n" << Errors(loaded);
      continue;
    }
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied) << c.name;
    EXPECT_THAT(Errors(loaded), HasSubstr(c.refusal)) << c.name;
    LoadedConfig trusted = Load(s, user, c.workspace, "", /*workspace_trusted=*/true);
    EXPECT_TRUE(trusted.status().ok()) << c.name << "\n" << Errors(trusted);
  }
}

TEST(NetworkNarrowingTest, WorkspaceMayMoveEgressOnlyTowardNames) {
  ExpectNarrowing(kEgressUser,
                  {
                      {"network ask to names", "[network]\negress = \"names\"\n", nullptr},
                      {"network ask kept", "[network]\negress = \"ask\"\n", nullptr},
                      {"network ask to open", "[network]\negress = \"open\"\n",
                       "lazaret.toml:2:10: network.egress: sets network.egress to \"open\"; your "
                       "configuration has \"ask\" (a workspace may only move it toward \"names\""},
                      {"open profile to ask", "[profiles.op]\negress = \"ask\"\n", nullptr},
                      {"names profile to ask", "[profiles.nm]\negress = \"ask\"\n",
                       "sets profiles.nm.egress to \"ask\"; your configuration has \"names\""},
                      {"a profile without its own follows the network one",
                       "[profiles.default]\negress = \"open\"\n",
                       "sets profiles.default.egress to \"open\"; your configuration has \"ask\""},
                  });
}

TEST(NetworkNarrowingTest, AskTimeoutOnlyLower) {
  ExpectNarrowing(kEgressUser,
                  {
                      {"lower", "[network]\nask_timeout = 10\n", nullptr},
                      {"same", "[profiles.op]\nask_timeout = 60\n", nullptr},
                      {"higher", "[network]\nask_timeout = 61\n",
                       "raises network.ask_timeout to 61 seconds; your configuration has 60"},
                      {"higher in a profile", "[profiles.nm]\nask_timeout = 600\n",
                       "raises profiles.nm.ask_timeout to 600 seconds"},
                  });
}

TEST(NetworkNarrowingTest, WorkspaceMayOnlyDisableTrustHostCaAndChooseDeny) {
  ExpectNarrowing(
      kEgressUser,
      {
          {"trust off where on", "[profiles.op]\ntrust_host_ca = false\n", nullptr},
          {"trust on where on", "[profiles.op]\ntrust_host_ca = true\n", nullptr},
          {"trust on where off", "[profiles.nm]\ntrust_host_ca = true\n",
           "sets profiles.nm.trust_host_ca, which would make the sandbox trust the CAs"},
          {"trust on network-wide", "[network]\ntrust_host_ca = true\n",
           "sets network.trust_host_ca"},
          {"deny", "[network]\nask_unattended = \"deny\"\n", nullptr},
          {"wait where the user waits", "[profiles.op]\nask_unattended = \"wait\"\n", nullptr},
          {"wait where the user denies", "[network]\nask_unattended = \"wait\"\n",
           "sets network.ask_unattended to \"wait\""},
      });
}

TEST(NetworkNarrowingTest, WorkspacePortsIsAnErrorEvenWhenTrusted) {
  Scratch s;
  const std::string user = "[profiles.dev]\nimage = \"localhost/x:1\"\nports = [\"3000\"]\n";
  for (bool trusted : {false, true}) {
    LoadedConfig c = Load(s, user, "[profiles.dev]\nports = [\"3000\"]\n", "", trusted);
    EXPECT_FALSE(c.status().ok()) << trusted;
    EXPECT_THAT(Errors(c), HasSubstr("lazaret.toml:2:9: profiles.dev.ports: a workspace file may "
                                     "not open ports"))
        << trusted;
  }
  // The user's own file and an explicit --config file may.
  LoadedConfig c = Load(s, user, "", "[profiles.dev]\nports = [\"8080:3000\"]\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> dev = c.Profile("dev");
  ASSERT_TRUE(dev.ok());
  ASSERT_EQ(dev->ports.size(), 1u);
  EXPECT_EQ(dev->ports[0].value.host_port, 8080u);
  EXPECT_EQ(dev->ports[0].origin.layer, Layer::kExplicit);
}

}  // namespace
}  // namespace lazaret::config
