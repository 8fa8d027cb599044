// The network part of a resolved profile through the whole pipeline (every
// entry with its layer, file and line; order and de-duplication) and the
// workspace clamp on the network keys: names, a profile's default_allow,
// dns_upstream.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// "value@layer:line" for each entry, so order, de-duplication and sources
// are checked at once.
std::string At(const Origin& o) {
  return absl::StrCat(LayerName(o.layer), ":", o.line, ":", o.key_path);
}

std::vector<std::string> Entries(const std::vector<Setting<Cidr>>& l) {
  std::vector<std::string> out;
  for (const Setting<Cidr>& e : l)
    out.push_back(absl::StrCat(e.value.ToString(), "@", At(e.origin)));
  return out;
}

std::vector<std::string> Entries(const std::vector<Setting<std::string>>& l) {
  std::vector<std::string> out;
  for (const Setting<std::string>& e : l) out.push_back(absl::StrCat(e.value, "@", At(e.origin)));
  return out;
}

const KeySource* SourceOf(const ResolvedProfile& p, const std::string& key) {
  for (const KeySource& k : p.sources) {
    if (k.key_path == key) return &k;
  }
  return nullptr;
}

constexpr char kUser[] = R"(
[network]
default_allow = ["192.0.2.0/24", "2001:db8::/32"]
default_allow_domains = [
  "pypi.org",
  "*.npmjs.org",
]
dns_upstream = ["192.0.2.53", "[2001:db8::53]:5353"]
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
  LoadedConfig c = Load(s, kUser);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> ab = c.Profile("ab");
  ASSERT_TRUE(ab.ok()) << ab.status();
  // 192.0.2.0/24 again in allow_egress keeps its first place and line.
  EXPECT_THAT(Entries(ab->allow), ElementsAre("192.0.2.0/24@user:3:network.default_allow[0]",
                                              "2001:db8::/32@user:3:network.default_allow[1]",
                                              "198.51.100.0/24@user:11:profiles.ab.allow_egress[0]",
                                              "10.20.0.0/16@user:11:profiles.ab.allow_egress[2]"));
  EXPECT_THAT(Entries(ab->allow_domains),
              ElementsAre("pypi.org@user:5:network.default_allow_domains[0]",
                          "*.npmjs.org@user:6:network.default_allow_domains[1]",
                          "api.example.com@user:12:profiles.ab.allow_domains[0]",
                          "*.example.net@user:12:profiles.ab.allow_domains[2]"));
  EXPECT_THAT(ab->dns_upstream, ElementsAre("192.0.2.53:53", "[2001:db8::53]:5353"));
  ASSERT_FALSE(ab->deny.empty());
  for (const Setting<Cidr>& d : ab->deny) {
    EXPECT_EQ(d.origin.layer, Layer::kEmbeddedDefault);
    EXPECT_EQ(d.origin.file, kEmbeddedFileName);
    EXPECT_GT(d.origin.line, 0u);
    EXPECT_THAT(d.origin.key_path, HasSubstr("network.default_deny["));
  }
  for (const Setting<Cidr>& a : ab->allow) {
    EXPECT_EQ(a.origin.file, s.Path("home/.config/lazaret/config.toml"));
  }
  EXPECT_EQ(SourceOf(*ab, "network.default_allow")->layer, Layer::kUser);
  EXPECT_EQ(SourceOf(*ab, "network.default_allow_domains")->layer, Layer::kUser);
  EXPECT_EQ(SourceOf(*ab, "profiles.ab.allow_domains")->layer, Layer::kUser);
  EXPECT_EQ(SourceOf(*ab, "network.dns_upstream")->layer, Layer::kUser);
}

TEST(NetworkLoaderTest, AProfilesDefaultAllowReplacesTheNetworkOne) {
  Scratch s;
  LoadedConfig c = Load(s, kUser);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> names = c.Profile("names");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(names->allow, IsEmpty());  // names only
  EXPECT_THAT(Entries(names->allow_domains),
              ElementsAre("pypi.org@user:5:network.default_allow_domains[0]",
                          "*.npmjs.org@user:6:network.default_allow_domains[1]",
                          "github.com@user:16:profiles.names.allow_domains[0]"));
  EXPECT_NE(SourceOf(*names, "profiles.names.default_allow"), nullptr);
  EXPECT_EQ(SourceOf(*names, "network.default_allow"), nullptr);
  EXPECT_FALSE(names->deny.empty());  // the deny list still applies
  absl::StatusOr<ResolvedProfile> own = c.Profile("own");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_THAT(Entries(own->allow),
              ElementsAre("203.0.113.0/24@user:19:profiles.own.default_allow[0]"));
}

TEST(NetworkLoaderTest, WithoutTheNewKeysThereAreNoNamesAndTheHostsResolvers) {
  Scratch s;
  LoadedConfig c = Load(s, "");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> p = c.Profile("");
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(p->allow_domains, IsEmpty());
  EXPECT_THAT(p->dns_upstream, IsEmpty());
  EXPECT_THAT(Entries(p->allow),
              ElementsAre("0.0.0.0/0@embedded default:9:network.default_allow[0]",
                          "::/0@embedded default:9:network.default_allow[1]"));
}

TEST(NetworkLoaderTest, EachEntryNamesTheLayerThatWroteIt) {
  Scratch s;
  const std::string workspace = "[profiles.ab]\nallow_domains = [\"api.example.com\"]\n";
  const std::string explicit_config =
      "[network]\ndefault_allow_domains = [\"files.example.com\"]\n";
  LoadedConfig c = Load(s, kUser, workspace, explicit_config);
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

struct NarrowCase {
  const char* name;
  const char* workspace;
  const char* refusal;  // substring of the errors; null: accepted
};

TEST(NetworkLoaderTest, AnUntrustedWorkspaceMayOnlyNarrowTheNetworkKeys) {
  const NarrowCase cases[] = {
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
  for (const NarrowCase& c : cases) {
    LoadedConfig loaded = Load(s, kUser, c.workspace);
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
    LoadedConfig trusted = Load(s, kUser, c.workspace, "", /*workspace_trusted=*/true);
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

}  // namespace
}  // namespace lazaret::config
