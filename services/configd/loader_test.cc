#include "services/configd/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/constants.h"
#include "services/configd/embedded_default.h"
#include "services/configd/layer_files.h"
#include "services/configd/test_util.h"
#include "services/configd/trust_store.h"

namespace lazaret::config {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using testing::Errors;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Load;
using ::testing::Not;
using testing::Scratch;
using testing::SourceOf;
using testing::Warnings;

std::string Q(const std::string& s) { return "\"" + s + "\""; }

std::vector<std::string> Texts(const std::vector<Setting<vocab::Cidr>>& cidrs) {
  std::vector<std::string> out;
  for (const Setting<vocab::Cidr>& c : cidrs) out.push_back(c.value.ToString());
  return out;
}

// The user's own grant used by the narrowing tests.
constexpr char kUser[] = R"(
[escalation]
auto_approve = ["aws sts get-caller-identity", "gh pr view"]

[profiles.claude-code]
image = "docker.io/library/node:22.11.0"
persistent_dirs = ["/root", "/usr"]
allow_egress = ["160.79.104.0/23", "10.20.0.0/16"]
env = { ANTHROPIC_API_KEY = "env:ANTHROPIC_API_KEY", MODE = "x" }

[[profiles.claude-code.volumes]]
host = "~/src/shared"
container = "/shared"
mode = "rw,z"

[[profiles.claude-code.volumes]]
host = "~/docs"
container = "/docs"
mode = "ro"
)";

// Every entry of the built-in deny list, as TOML array items.
std::string EmbeddedDenyItems() {
  Diagnostics d;
  LayerConfig e = ParseLayer(Layer::kEmbeddedDefault, "e", EmbeddedDefaultToml(), d);
  std::vector<std::string> items;
  for (const auto& n : e.default_deny->value) items.push_back(Q(n.value.ToString()));
  return absl::StrJoin(items, ", ");
}

TEST(LoaderTest, EmbeddedDefaultAloneGivesAWorkingDefaultProfile) {
  Scratch s;
  LoadedConfig c = Load(s, "");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_THAT(c.diagnostics.warnings(), IsEmpty()) << Warnings(c);
  EXPECT_EQ(c.default_profile, "default");
  absl::StatusOr<ResolvedProfile> p = c.Profile("");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "default");
  EXPECT_EQ(p->image, kDefaultSandboxImage);
  EXPECT_EQ(p->data_root, s.Path("home/.local/share/lazaret"));
  EXPECT_EQ(p->profile_dir, s.Path("home/.local/share/lazaret/default"));
  EXPECT_EQ(p->socket_dir, s.Path("run/escalation"));
  EXPECT_TRUE(p->escalation_enabled);
  EXPECT_THAT(p->auto_approve, IsEmpty());
  EXPECT_THAT(p->env, IsEmpty());
  EXPECT_THAT(p->volumes, IsEmpty());
  EXPECT_THAT(p->persistent_dirs, IsEmpty());
  EXPECT_THAT(Texts(p->allow), IsEmpty());  // egress = "ask": names decide
  for (const char* must :
       {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
        "127.0.0.0/8", "0.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4", "fc00::/7", "fe80::/10",
        "::1/128", "64:ff9b::/96", "::ffff:0.0.0.0/96"}) {
    EXPECT_THAT(Texts(p->deny), Contains(must));
  }
  EXPECT_EQ(SourceOf(*p, "storage.data_root")->layer, Layer::kEmbeddedDefault);
  ASSERT_EQ(c.layers.size(), 1u);
  EXPECT_EQ(c.layers[0].path, kEmbeddedFileName);
}

TEST(LoaderTest, PrecedenceIsEmbeddedThenUserThenWorkspaceThenExplicit) {
  Scratch s;
  const std::string user = R"(
[storage]
data_root = "/srv/from-user"
[escalation]
auto_approve = ["aws sts get-caller-identity", "gh pr view"]
[profiles.default]
image = "localhost/user-image:1"
env = { A = "user", B = "user" }
)";
  // Narrows only: keeps data_root, drops one auto_approve entry, replaces env with literals.
  const std::string workspace = R"(
[escalation]
auto_approve = ["gh pr view"]
[profiles.default]
env = { A = "workspace" }
)";
  const std::string explicit_config = R"(
[storage]
data_root = "/srv/from-explicit"
[profiles.default]
image = "localhost/explicit-image:2"
)";
  LoadedConfig c = Load(s, user, workspace, explicit_config);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  ResolvedProfile p = *c.Profile("default");
  EXPECT_EQ(p.data_root, "/srv/from-explicit");
  EXPECT_EQ(SourceOf(p, "storage.data_root")->layer, Layer::kExplicit);
  EXPECT_EQ(p.image, "localhost/explicit-image:2");
  // Lists and the env table are replaced whole by the highest layer that sets them.
  ASSERT_EQ(p.auto_approve.size(), 1u);
  EXPECT_EQ(p.auto_approve[0].value.text, "gh pr view");
  EXPECT_EQ(SourceOf(p, "escalation.auto_approve")->layer, Layer::kWorkspace);
  ASSERT_EQ(p.env.size(), 1u);
  EXPECT_EQ(p.env[0].name, "A");
  EXPECT_EQ(p.env[0].value, "workspace");
  EXPECT_EQ(p.env[0].source, Layer::kWorkspace);
  // Keys nobody set come from the embedded default.
  EXPECT_EQ(SourceOf(p, "escalation.enabled")->layer, Layer::kEmbeddedDefault);
  ASSERT_EQ(c.layers.size(), 4u);
  EXPECT_EQ(c.layers[2].layer, Layer::kWorkspace);
  EXPECT_FALSE(c.layers[2].trusted);
}

TEST(LoaderTest, ProfilesMergeKeyByKeyAcrossLayers) {
  Scratch s;
  LoadedConfig c = Load(s, "[profiles.default]\npersistent_dirs = [\"/root\"]\n", "",
                        "[profiles.extra]\nimage = \"localhost/x:1\"\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  ResolvedProfile p = *c.Profile("default");
  EXPECT_EQ(p.image, kDefaultSandboxImage);  // from the embedded default
  EXPECT_THAT(p.persistent_dirs, ElementsAre("/root"));
  EXPECT_TRUE(c.Profile("extra").ok());
}

TEST(LoaderTest, KeepPlantedRepositoriesDefaultsToFalseAndIsABoolean) {
  Scratch s;
  LoadedConfig c = Load(s,
                        "[profiles.deps]\nimage = \"localhost/x:1\"\n"
                        "keep_planted_repositories = true\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_TRUE(c.Profile("deps")->keep_planted_repositories);
  EXPECT_FALSE(c.Profile("default")->keep_planted_repositories);
  LoadedConfig bad = Load(s,
                          "[profiles.deps]\nimage = \"localhost/x:1\"\n"
                          "keep_planted_repositories = \"yes\"\n");
  EXPECT_THAT(Errors(bad), HasSubstr("profiles.deps.keep_planted_repositories"));
}

TEST(LoaderTest, ProfileLookupValidatesTheName) {
  Scratch s;
  LoadedConfig c = Load(s, "[profiles.claude-code]\nimage = \"localhost/x:1\"\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_EQ(c.Profile("../etc").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Profile("a").status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status st = c.Profile("claude-cod").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(st.message()), HasSubstr("did you mean \"claude-code\"?"));
}

TEST(LoaderTest, RequiredKeysAreCheckedAfterMerging) {
  Scratch s;
  LoadedConfig c = Load(s, "[profiles.noimage]\npersistent_dirs = [\"/root\"]\n");
  EXPECT_THAT(Errors(c), HasSubstr("config.toml:1:1: profiles.noimage: profile \"noimage\" has "
                                   "no image\n  fix: add image ="));
  c = Load(s, "default_profile = \"missing\"\n");
  EXPECT_THAT(Errors(c), HasSubstr("default_profile: names profile \"missing\", which is not "
                                   "defined"));
}

TEST(LoaderTest, ExpandsVolumesAndReportsCanonicalHostPaths) {
  Scratch s;
  s.Dir("home/src/real");
  s.Symlink(s.Path("home/src/real"), "home/src/link");
  LoadedConfig c = Load(s, R"(
[profiles.default]
volumes = [
  { host = "~/src/link", container = "/a", mode = "rw" },
  { host = "{profile_dir}/cache", container = "/root/.cache", mode = "rw,Z" },
  { host = "{workspace_dir}/data", container = "/data" },
]
)");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  ResolvedProfile p = *c.Profile("default");
  ASSERT_EQ(p.volumes.size(), 3u);
  EXPECT_EQ(p.volumes[0].host, s.Path("home/src/real"));
  EXPECT_EQ(p.volumes[0].access, Access::kReadWrite);
  EXPECT_EQ(p.volumes[1].host, s.Path("home/.local/share/lazaret/default/cache"));
  EXPECT_EQ(p.volumes[1].selinux, SelinuxLabel::kPrivate);
  EXPECT_EQ(p.volumes[2].host, s.workspace() + "/data");
  EXPECT_EQ(p.volumes[2].access, Access::kReadOnly);
  EXPECT_EQ(p.volumes[2].source, Layer::kUser);
}

// THREATS.md "Configuration": each case, through the whole pipeline.
struct ThreatCase {
  const char* name;
  std::string user;  // the user's own file
  const char* error;
};

TEST(LoaderTest, ThreatCasesAreRejectedWithFileKeyAndLine) {
  Scratch s;
  // A symlink inside the workspace pointing at ~/.ssh, and one in data_root.
  s.Symlink(s.Path("home/.ssh"), "ws/innocent");
  s.Dir("home/.local/share/lazaret");
  s.Symlink(s.Path("home/.ssh"), "home/.local/share/lazaret/evil");
  s.Dir("home/.gnupg");
  s.Symlink(s.Path("home/.gnupg"), "home/datalink");
  const ThreatCase cases[] = {
      {"profile name with a dot", "[profiles.\"a.b\"]\nimage = \"localhost/x:1\"\n",
       "config.toml:1:11: profiles.a.b: \"a.b\" is not a valid profile name"},
      {"profile name with a slash", "[profiles.\"a/b\"]\nimage = \"localhost/x:1\"\n",
       "\"a/b\" is not a valid profile name"},
      {"profile name with metacharacters", "[profiles.\"a;rm\"]\nimage = \"localhost/x:1\"\n",
       "\"a;rm\" is not a valid profile name"},
      {"profile name too long",
       "[profiles.abcdefghijklmnopqrstuvwxyz0123456]\nimage = \"localhost/x:1\"\n",
       "is not a valid profile name"},
      {"dot-dot in a volume",
       "[profiles.default]\nvolumes = [{ host = \"{workspace_dir}/../other\", container = \"/o\" "
       "}]\n",
       "config.toml:2:21: profiles.default.volumes[0].host: \"{workspace_dir}/../other\" expands "
       "to"},
      {"dot-dot in data_root", "[storage]\ndata_root = \"~/x/../../etc\"\n",
       "config.toml:2:13: storage.data_root: \"~/x/../../etc\" expands to"},
      {"tilde not first",
       "[profiles.default]\nvolumes = [{ host = \"src/~\", container = \"/o\" }]\n",
       "profiles.default.volumes[0].host: \"src/~\" expands to \"src/~\", which is not absolute"},
      {"unknown token",
       "[profiles.default]\nvolumes = [{ host = \"{home_dir}/x\", container = \"/o\" }]\n",
       "config.toml:2:21: profiles.default.volumes[0].host: \"{home_dir}/x\" unknown token "
       "{home_dir}"},
      {"symlink in workspace to ~/.ssh as a volume",
       "[profiles.default]\nvolumes = [{ host = \"{workspace_dir}/innocent\", container = \"/k\" "
       "}]\n",
       "volume \"{workspace_dir}/innocent\" resolves to \"SSH\", which is ~/.ssh (ssh keys)"},
      {"symlink in data_root to ~/.ssh as a profile dir",
       "[profiles.evil]\nimage = \"localhost/x:1\"\n",
       "lazaret/evil resolves to \"SSH\", outside data_root"},
      {"data_root through a symlink to ~/.gnupg", "[storage]\ndata_root = \"~/datalink\"\n",
       "storage.data_root: resolves to \"GNUPG\", which is ~/.gnupg"},
      {"data_root inside the workspace", "[storage]\ndata_root = \"/WS/data\"\n",
       "inside the workspace"},
      {"home as a volume", "[profiles.default]\nvolumes = [{ host = \"~\", container = \"/h\" }]\n",
       "which contains ~/.ssh"},
      {"root as a volume", "[profiles.default]\nvolumes = [{ host = \"/\", container = \"/h\" }]\n",
       "which contains"},
      {"the trust store as a volume",
       "[profiles.default]\nvolumes = [{ host = \"~/.local/state/lazaret\", container = \"/s\" "
       "}]\n",
       "Lazaret's state directory"},
      {"the runtime dir as a volume",
       "[profiles.default]\nvolumes = [{ host = \"/RUN\", container = \"/s\" }]\n",
       "Lazaret's runtime directory"},
      {"the workspace .git as a volume",
       "[profiles.default]\nvolumes = [{ host = \"{workspace_dir}/.git\", container = \"/g\", "
       "mode = \"rw\" }]\n",
       "Git Shadow"},
      {"another profile's data",
       "[profiles.other]\nimage = \"localhost/x:1\"\n[profiles.default]\nvolumes = [{ host = "
       "\"~/.local/share/lazaret/other\", container = \"/o\" }]\n",
       "inside another profile's data"},
      {"data_root itself",
       "[profiles.default]\nvolumes = [{ host = \"~/.local/share/lazaret\", container = \"/o\" "
       "}]\n",
       "contains data_root"},
      {"socket_dir in the workspace", "[escalation]\nsocket_dir = \"/WS/sock\"\n",
       "escalation.socket_dir: resolves to"},
      {"auto_approve git", "[escalation]\nauto_approve = [\"git log\"]\n",
       "config.toml:2:17: escalation.auto_approve[0]: \"git log\" is refused"},
  };
  for (const ThreatCase& c : cases) {
    std::string text = c.user;
    auto replace = [](std::string& t, const std::string& from, const std::string& to) {
      for (size_t at = t.find(from); at != std::string::npos; at = t.find(from, at + to.size())) {
        t.replace(at, from.size(), to);
      }
    };
    replace(text, "/WS", s.workspace());
    replace(text, "/RUN", s.Path("run"));
    std::string expected = c.error;
    replace(expected, "SSH", s.Path("home/.ssh"));
    replace(expected, "GNUPG", s.Path("home/.gnupg"));
    LoadedConfig loaded = Load(s, text);
    EXPECT_THAT(Errors(loaded), HasSubstr(expected)) << c.name;
    EXPECT_THAT(loaded.profiles, IsEmpty()) << c.name << ": a broken config resolves nothing";
  }
}

TEST(LoaderTest, EnvPullsAreReturnedAsHostVariablesNeverResolved) {
  Scratch s;
  setenv("LAZARET_TEST_SECRET", "s3cret", 1);
  LoadedConfig c = Load(s, R"(
[profiles.default]
env = { API_KEY = "env:LAZARET_TEST_SECRET", UNSET = "env:LAZARET_TEST_DEFINITELY_UNSET", PLAIN = "v" }
)");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  ResolvedProfile p = *c.Profile("default");
  ASSERT_EQ(p.env.size(), 3u);
  for (const ResolvedEnv& e : p.env) {
    EXPECT_NE(e.value, "s3cret");
    if (e.name == "API_KEY") {
      EXPECT_TRUE(e.host_pull);
      EXPECT_EQ(e.value, "LAZARET_TEST_SECRET");
    }
    if (e.name == "UNSET") {
      // Unset at configuration time is fine: `lazaret run` fails closed later.
      EXPECT_TRUE(e.host_pull);
    }
  }
  unsetenv("LAZARET_TEST_SECRET");
}

TEST(LoaderTest, ReplacingTheDenyListWarnsAboutDroppedBuiltins) {
  Scratch s;
  LoadedConfig c = Load(s, "[network]\ndefault_deny = [\"10.0.0.0/8\"]\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_THAT(Warnings(c), HasSubstr("no longer denies \"169.254.0.0/16\""));
}

// Overlapping volume grants: the most specific grant decides, whatever the
// order of the grants in the user's file.
struct GrantCase {
  const char* name;
  std::vector<std::pair<std::string, std::string>> granted;  // host, mode
  std::vector<std::pair<std::string, std::string>> asked;    // host, mode (workspace file)
  const char* refusal;                                       // nullptr: accepted
};

std::string VolumeList(const std::vector<std::pair<std::string, std::string>>& vols) {
  std::vector<std::string> items;
  for (size_t i = 0; i < vols.size(); ++i) {
    items.push_back(absl::StrCat("{ host = \"", vols[i].first, "\", container = \"/v", i,
                                 "\", mode = \"", vols[i].second, "\" }"));
  }
  return absl::StrCat("volumes = [", absl::StrJoin(items, ", "), "]\n");
}

TEST(LoaderTest, TheMostSpecificVolumeGrantDecidesInEitherOrder) {
  const std::vector<GrantCase> cases = {
      {"rw parent, ro child: the child stays ro",
       {{"~/d", "rw"}, {"~/d/secret", "ro"}},
       {{"~/d/secret", "rw"}},
       "mounts \"HOME/d/secret\" read-write; your configuration grants it read-only"},
      {"rw parent, ro child: below the child stays ro",
       {{"~/d", "rw"}, {"~/d/secret", "ro"}},
       {{"~/d/secret/key", "rw"}},
       "mounts \"HOME/d/secret/key\" read-write; your configuration grants \"HOME/d/secret\" "
       "read-only"},
      {"rw parent, ro child: the child ro is fine",
       {{"~/d", "rw"}, {"~/d/secret", "ro"}},
       {{"~/d/secret", "ro"}},
       nullptr},
      {"rw parent, ro child: another child rw is fine",
       {{"~/d", "rw"}, {"~/d/secret", "ro"}},
       {{"~/d/open", "rw"}},
       nullptr},
      {"rw parent, ro child: the parent rw alone exposes the child",
       {{"~/d", "rw"}, {"~/d/secret", "ro"}},
       {{"~/d", "rw"}},
       "mounts \"HOME/d\" read-write, which includes \"HOME/d/secret\" that your configuration "
       "grants read-only"},
      {"rw parent, ro child: both as granted",
       {{"~/d", "rw"}, {"~/d/secret", "ro"}},
       {{"~/d", "rw"}, {"~/d/secret", "ro"}},
       nullptr},
      {"ro parent, rw child: the child rw",
       {{"~/d", "ro"}, {"~/d/open", "rw"}},
       {{"~/d/open", "rw"}},
       nullptr},
      {"ro parent, rw child: below the child rw",
       {{"~/d", "ro"}, {"~/d/open", "rw"}},
       {{"~/d/open/x", "rw"}},
       nullptr},
      {"ro parent, rw child: the parent rw",
       {{"~/d", "ro"}, {"~/d/open", "rw"}},
       {{"~/d", "rw"}},
       "mounts \"HOME/d\" read-write; your configuration grants it read-only"},
      {"ro parent, rw child: a sibling of the child rw",
       {{"~/d", "ro"}, {"~/d/open", "rw"}},
       {{"~/d/secret", "rw"}},
       "mounts \"HOME/d/secret\" read-write; your configuration grants \"HOME/d\" read-only"},
      {"siblings with a common prefix: ~/dd is not below ~/d",
       {{"~/d", "rw"}, {"~/dd", "ro"}},
       {{"~/dd", "rw"}},
       "mounts \"HOME/dd\" read-write; your configuration grants it read-only"},
      {"siblings with a common prefix: below ~/dd",
       {{"~/d", "rw"}, {"~/dd", "ro"}},
       {{"~/dd/x", "rw"}},
       "mounts \"HOME/dd/x\" read-write; your configuration grants \"HOME/dd\" read-only"},
      {"siblings with a common prefix: ~/d rw does not include ~/dd",
       {{"~/d", "rw"}, {"~/dd", "ro"}},
       {{"~/d", "rw"}},
       nullptr},
      {"the same path granted ro and rw: ro",
       {{"~/d", "rw"}, {"~/d", "ro"}},
       {{"~/d", "rw"}},
       "mounts \"HOME/d\" read-write; your configuration grants it read-only"},
  };
  Scratch s;
  for (const char* d : {"home/d/secret/key", "home/d/open/x", "home/dd/x"}) s.Dir(d);
  for (const GrantCase& c : cases) {
    for (bool reversed : {false, true}) {
      std::vector<std::pair<std::string, std::string>> granted = c.granted;
      if (reversed) std::reverse(granted.begin(), granted.end());
      const std::string user =
          absl::StrCat("[profiles.p1]\nimage = \"localhost/x:1\"\n", VolumeList(granted));
      const std::string ws = absl::StrCat("[profiles.p1]\n", VolumeList(c.asked));
      LoadedConfig loaded = Load(s, user, ws);
      const std::string label = absl::StrCat(c.name, reversed ? " (grants reversed)" : "");
      if (c.refusal == nullptr) {
        EXPECT_TRUE(loaded.status().ok()) << label << "\n" << Errors(loaded);
        continue;
      }
      std::string expected = c.refusal;
      for (size_t at = expected.find("HOME"); at != std::string::npos;
           at = expected.find("HOME", at + 1)) {
        expected.replace(at, 4, s.Path("home"));
      }
      EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied) << label;
      EXPECT_THAT(Errors(loaded), HasSubstr(expected)) << label;
      EXPECT_THAT(loaded.profiles, IsEmpty()) << label;
    }
  }
}

struct NarrowCase {
  const char* name;
  std::string workspace;
  const char* refusal;  // nullptr: accepted without trust
};

std::vector<NarrowCase> NarrowCases() {
  const std::string deny_all = EmbeddedDenyItems();
  return {
      // Narrowing: accepted without trust.
      {"drop an IPv6 allow", "[network]\ndefault_allow = [\"0.0.0.0/0\"]\n", nullptr},
      {"allow a public part", "[network]\ndefault_allow = [\"93.184.216.0/24\"]\n", nullptr},
      {"add a deny", "[network]\ndefault_deny = [" + deny_all + ", \"203.0.113.0/24\"]\n", nullptr},
      {"escalation off", "[escalation]\nenabled = false\n", nullptr},
      {"no auto_approve", "[escalation]\nauto_approve = []\n", nullptr},
      {"fewer auto_approve", "[escalation]\nauto_approve = [\"gh pr view\"]\n", nullptr},
      {"longer auto_approve prefix", "[escalation]\nauto_approve = [\"gh pr view 12\"]\n", nullptr},
      {"same data_root spelled differently", "[storage]\ndata_root = \"~/.local/share/lazaret/\"\n",
       nullptr},
      {"same socket_dir", "[escalation]\nsocket_dir = \"{runtime_dir}/escalation\"\n", nullptr},
      {"same default profile", "default_profile = \"default\"\n", nullptr},
      {"same image", "[profiles.claude-code]\nimage = \"docker.io/library/node:22.11.0\"\n",
       nullptr},
      {"fewer persistent dirs", "[profiles.claude-code]\npersistent_dirs = [\"/root\"]\n", nullptr},
      {"fewer egress", "[profiles.claude-code]\nallow_egress = [\"160.79.104.0/23\"]\n", nullptr},
      {"narrower egress", "[profiles.claude-code]\nallow_egress = [\"160.79.105.0/24\"]\n",
       nullptr},
      {"granted egress kept even where denied",
       "[profiles.claude-code]\nallow_egress = [\"10.20.0.0/16\"]\n", nullptr},
      {"fewer env pulls", "[profiles.claude-code]\nenv = { MODE = \"y\" }\n", nullptr},
      {"same env pull",
       "[profiles.claude-code]\nenv = { ANTHROPIC_API_KEY = \"env:ANTHROPIC_API_KEY\" }\n",
       nullptr},
      {"new literal env", "[profiles.claude-code]\nenv = { RUST_BACKTRACE = \"1\" }\n", nullptr},
      {"no volumes", "[profiles.claude-code]\nvolumes = []\n", nullptr},
      {"read-only instead of read-write",
       "[profiles.claude-code]\nvolumes = [{ host = \"~/src/shared\", container = \"/shared\", "
       "mode = \"ro,z\" }]\n",
       nullptr},
      {"a subdirectory of a granted volume",
       "[profiles.claude-code]\nvolumes = [{ host = \"~/src/shared/sub\", container = \"/sub\", "
       "mode = \"rw\" }]\n",
       nullptr},
      {"no relabel",
       "[profiles.claude-code]\nvolumes = [{ host = \"~/docs\", container = \"/d\" }]\n", nullptr},
      {"planted repositories neutralised",
       "[profiles.claude-code]\nkeep_planted_repositories = false\n", nullptr},
      // Widening: refused naming the key.
      {"auto_approve date", "[escalation]\nauto_approve = [\"date\"]\n",
       "config:2:17: escalation.auto_approve[0]: auto-approves \"date\", which no "
       "escalation.auto_approve entry of your configuration covers"},
      {"shorter auto_approve prefix", "[escalation]\nauto_approve = [\"aws sts\"]\n",
       "escalation.auto_approve[0]: auto-approves \"aws sts\""},
      {"longer auto_approve prefix with an option the user's entry does not list",
       "[escalation]\nauto_approve = [\"aws sts get-caller-identity --query Account\"]\n",
       "auto-approves \"aws sts get-caller-identity --query Account\", which no"},
      {"allow_egress CIDR", "[profiles.claude-code]\nallow_egress = [\"93.184.216.0/24\"]\n",
       "config:2:17: profiles.claude-code.allow_egress[0]: allows egress to \"93.184.216.0/24\""},
      {"wider allow_egress", "[profiles.claude-code]\nallow_egress = [\"160.79.0.0/16\"]\n",
       "allows egress to \"160.79.0.0/16\""},
      {"allow_egress punching a deny",
       "[profiles.claude-code]\nallow_egress = [\"10.20.1.0/24\"]\n",
       "allows egress to \"10.20.1.0/24\""},
      {"default_allow into a denied range",
       "[network]\ndefault_allow = [\"0.0.0.0/0\", \"10.1.0.0/16\"]\n",
       "network.default_allow[1]: allows \"10.1.0.0/16\""},
      {"drop a deny", "[network]\ndefault_deny = [\"10.0.0.0/8\"]\n",
       "network.default_deny: drops \"169.254.0.0/16\""},
      {"same deny list, no egress",
       "[network]\ndefault_deny = [" + deny_all + "]\n[profiles.claude-code]\nallow_egress = []\n",
       nullptr},
      {"escalation left on", "[escalation]\nenabled = true\n", nullptr},
      {"data_root", "[storage]\ndata_root = \"/tmp/elsewhere\"\n",
       "storage.data_root: changes data_root"},
      {"socket_dir", "[escalation]\nsocket_dir = \"/tmp/sockets\"\n",
       "escalation.socket_dir: changes escalation.socket_dir"},
      {"default profile", "default_profile = \"claude-code\"\n",
       "default_profile: changes the default profile"},
      {"image", "[profiles.claude-code]\nimage = \"docker.io/evil/node:22\"\n",
       "profiles.claude-code.image: changes the image"},
      {"new profile", "[profiles.yolo]\nimage = \"localhost/x:1\"\n",
       "profiles.yolo: defines profile \"yolo\""},
      {"planted repositories kept", "[profiles.claude-code]\nkeep_planted_repositories = true\n",
       "profiles.claude-code.keep_planted_repositories: keeps the git repositories a session "
       "plants armed"},
      {"persistent dir", "[profiles.claude-code]\npersistent_dirs = [\"/root\", \"/etc\"]\n",
       "profiles.claude-code.persistent_dirs[1]: persists \"/etc\""},
      {"env pull", "[profiles.claude-code]\nenv = { X = \"env:AWS_SECRET_ACCESS_KEY\" }\n",
       "profiles.claude-code.env.X: pulls host variable $AWS_SECRET_ACCESS_KEY into X"},
      {"env pull renamed",
       "[profiles.claude-code]\nenv = { ANTHROPIC_API_KEY = \"env:GITHUB_TOKEN\" }\n",
       "pulls host variable $GITHUB_TOKEN"},
      {"new volume",
       "[profiles.claude-code]\nvolumes = [{ host = \"~/src/other\", container = \"/o\" }]\n",
       "profiles.claude-code.volumes[0].host: mounts \"HOME/src/other\", which no volume"},
      {"read-write where read-only",
       "[profiles.claude-code]\nvolumes = [{ host = \"~/docs\", container = \"/docs\", mode = "
       "\"rw\" }]\n",
       "profiles.claude-code.volumes[0]: mounts \"HOME/docs\" read-write"},
      {"relabel",
       "[profiles.claude-code]\nvolumes = [{ host = \"~/docs\", container = \"/d\", "
       "mode = \"Z\" }]\n",
       "relabels \"HOME/docs\" with mode \"Z\""},
      {"parent of a granted volume",
       "[profiles.claude-code]\nvolumes = [{ host = \"~/src\", container = \"/src\" }]\n",
       "mounts \"HOME/src\", which no volume"},
  };
}

TEST(LoaderTest, AnUntrustedWorkspaceFileMayOnlyNarrow) {
  Scratch s;
  s.Dir("home/src/shared/sub");
  s.Dir("home/src/other");
  s.Dir("home/docs");
  for (const NarrowCase& c : NarrowCases()) {
    LoadedConfig loaded = Load(s, kUser, c.workspace);
    if (c.refusal == nullptr) {
      EXPECT_TRUE(loaded.status().ok()) << c.name << "\n" << Errors(loaded);
      continue;
    }
    std::string expected = c.refusal;
    for (size_t at = expected.find("HOME"); at != std::string::npos;
         at = expected.find("HOME", at + 1)) {
      expected.replace(at, 4, s.Path("home"));
    }
    if (expected.rfind("config:", 0) == 0) {
      expected.replace(0, 6, s.workspace() + "/lazaret.toml");
    }
    EXPECT_THAT(Errors(loaded), HasSubstr(expected)) << c.name;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied) << c.name;
    EXPECT_THAT(Errors(loaded), HasSubstr("lazaret trust " + s.workspace() + "/lazaret.toml"))
        << c.name;
    EXPECT_THAT(loaded.profiles, IsEmpty()) << c.name;
  }
}

TEST(LoaderTest, TurningEscalationOnIsAWidening) {
  Scratch s;
  LoadedConfig c = Load(s, "[escalation]\nenabled = false\n", "[escalation]\nenabled = true\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Errors(c), HasSubstr("escalation.enabled: turns host escalation on"));
}

TEST(LoaderTest, ATrustedWorkspaceFileMayWiden) {
  Scratch s;
  s.Dir("home/src/other");
  for (const NarrowCase& c : NarrowCases()) {
    if (c.refusal == nullptr) continue;
    LoadedConfig loaded = Load(s, kUser, c.workspace, "", /*workspace_trusted=*/true);
    EXPECT_TRUE(loaded.status().ok()) << c.name << "\n" << Errors(loaded);
  }
}

TEST(LoaderTest, TheExplicitConfigMayWidenAndIsPartOfTheUsersGrant) {
  Scratch s;
  // --config adds a profile and egress; the workspace then narrows that profile.
  const std::string explicit_config =
      "[profiles.extra]\nimage = \"localhost/x:1\"\nallow_egress = [\"93.184.216.0/24\"]\n";
  LoadedConfig c = Load(s, "", "", explicit_config);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_THAT(Texts(c.Profile("extra")->allow), Contains("93.184.216.0/24"));
  c = Load(s, "", "[profiles.extra]\nallow_egress = []\n", explicit_config);
  EXPECT_TRUE(c.status().ok()) << Errors(c);
  // And a workspace value under an explicit one is overridden by it.
  c = Load(s, "", "[escalation]\nenabled = false\n", "[escalation]\nenabled = true\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_TRUE(c.Profile("")->escalation_enabled);
}

TEST(LoaderTest, ABrokenWorkspaceFileNeverFallsBack) {
  Scratch s;
  for (const char* broken : {"[escalation\nenabled = false\n", "[escalaton]\nenabled = false\n",
                             "[network]\ndefault_deny = [\"10.0.0.1/8\"]\n"}) {
    LoadedConfig c = Load(s, kUser, broken);
    EXPECT_FALSE(c.status().ok()) << broken;
    EXPECT_THAT(c.profiles, IsEmpty()) << broken;
    EXPECT_FALSE(c.Profile("claude-code").ok()) << broken;
    EXPECT_THAT(Errors(c), HasSubstr(s.workspace() + "/lazaret.toml:")) << broken;
  }
}

// Files on disk: the workspace file is read without following symlinks,
// must be a regular file, and its trust is its exact digest.
class LoadForSelectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = s_.Host();
    s_.File("home/.config/lazaret/config.toml", kUser);
    s_.Dir("home/src/shared");
    s_.Dir("home/docs");
  }
  LoadedConfig LoadNow(const std::string& explicit_config = "") {
    return LoadForSelector(host_, Selector{s_.workspace(), explicit_config});
  }
  std::string WsFile() const { return s_.workspace() + "/lazaret.toml"; }

  Scratch s_;
  HostContext host_;
};

TEST_F(LoadForSelectorTest, TrustIsForTheExactContentAndOneByteRevokesIt) {
  const std::string widening = "[escalation]\nauto_approve = [\"date\"]\n";
  s_.File("ws/lazaret.toml", widening);
  LoadedConfig c = LoadNow();
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied) << Errors(c);
  EXPECT_THAT(Errors(c), HasSubstr("escalation.auto_approve[0]"));

  TrustStore store(host_.TrustStoreFile());
  ASSERT_TRUE(store.Trust(WsFile(), Sha256Hex(widening)).ok());
  c = LoadNow();
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_EQ(c.Profile("default")->auto_approve.at(0).value.text, "date");
  ASSERT_EQ(c.layers.size(), 3u);
  EXPECT_TRUE(c.layers[2].trusted);
  EXPECT_EQ(c.layers[2].sha256, Sha256Hex(widening));

  // One byte changed: untrusted again.
  s_.File("ws/lazaret.toml", "[escalation]\nauto_approve = [\"date\"] \n");
  c = LoadNow();
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_FALSE(c.layers[2].trusted);

  // The same content elsewhere is not trusted either.
  s_.File("ws/lazaret.toml", widening);
  ASSERT_TRUE(LoadNow().status().ok());
  s_.File("ws2/lazaret.toml", widening);
  LoadedConfig other = LoadForSelector(host_, Selector{s_.Path("ws2"), ""});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kPermissionDenied);

  ASSERT_TRUE(store.Revoke(WsFile()).ok());
  EXPECT_EQ(LoadNow().status().code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(LoadForSelectorTest, AnUnsafeTrustStoreTrustsNothing) {
  const std::string widening = "[escalation]\nauto_approve = [\"date\"]\n";
  s_.File("ws/lazaret.toml", widening);
  TrustStore store(host_.TrustStoreFile());
  ASSERT_TRUE(store.Trust(WsFile(), Sha256Hex(widening)).ok());
  ASSERT_EQ(chmod(host_.TrustStoreFile().c_str(), 0666), 0);
  LoadedConfig c = LoadNow();
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Warnings(c), HasSubstr("nothing is trusted"));
}

TEST_F(LoadForSelectorTest, WorkspaceFileMustBeARegularFileNotASymlink) {
  s_.File("elsewhere.toml", "[escalation]\nenabled = false\n");
  s_.Symlink(s_.Path("elsewhere.toml"), "ws/lazaret.toml");
  LoadedConfig c = LoadNow();
  EXPECT_THAT(Errors(c), HasSubstr(WsFile() + ": is a symlink"));
  unlink(WsFile().c_str());
  ASSERT_EQ(mkfifo(WsFile().c_str(), 0600), 0);
  c = LoadNow();  // must not block on the FIFO
  EXPECT_THAT(Errors(c), HasSubstr("is not a regular file"));
  unlink(WsFile().c_str());
  s_.Dir("ws/lazaret.toml");
  c = LoadNow();
  EXPECT_THAT(Errors(c), HasSubstr("is not a regular file"));
}

TEST_F(LoadForSelectorTest, MissingFilesAreFineButAMissingExplicitConfigIsNot) {
  LoadedConfig c = LoadNow();
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_EQ(c.layers.size(), 2u);  // embedded + user
  c = LoadNow(s_.Path("nope.toml"));
  EXPECT_THAT(Errors(c), HasSubstr(s_.Path("nope.toml") + ": cannot open it"));
  c = LoadNow("relative.toml");
  EXPECT_THAT(Errors(c), HasSubstr("must be absolute"));
  c = LoadForSelector(host_, Selector{s_.Path("no-such-dir"), ""});
  EXPECT_THAT(Errors(c), HasSubstr("not an existing absolute directory"));
}

TEST_F(LoadForSelectorTest, AWorkspaceContainingYourConfigurationIsRefused) {
  // Running in the home directory would make config.toml and the trust
  // store agent-writable.
  LoadedConfig c = LoadForSelector(host_, Selector{s_.Path("home"), ""});
  EXPECT_THAT(Errors(c), HasSubstr(host_.LazaretConfigDir() + " is inside the workspace"));
  EXPECT_THAT(c.profiles, IsEmpty());
  HostContext h = host_;
  h.state_home = s_.workspace() + "/state";
  c = LoadForSelector(h, Selector{s_.workspace(), ""});
  EXPECT_THAT(Errors(c), HasSubstr("trust store"));
}

// Every file the trusted layers read is checked where it really is: a
// symlinked config.toml, a chain of links, a symlinked directory or a
// --config file that lands in the workspace, data_root or a read-write
// volume is refused, and nothing loads.
TEST_F(LoadForSelectorTest, TrustedFilesThatResolveIntoAgentWritablePlacesAreRefused) {
  const std::string user_cfg = s_.Path("home/.config/lazaret/config.toml");
  const std::string minimal = "[profiles.default]\nimage = \"localhost/x:1\"\n";
  struct Case {
    const char* name;
    std::function<std::string()> arrange;  // returns the workspace; may set explicit_
    const char* refusal;
  };
  std::string explicit_config;
  auto reset = [&] {
    // Restore a plain layout between cases.
    unlink(user_cfg.c_str());
    std::string cfg_dir = host_.LazaretConfigDir();
    unlink(cfg_dir.c_str());  // if it was made a symlink
    s_.File("home/.config/lazaret/config.toml", minimal);
    explicit_config.clear();
  };
  const std::vector<Case> cases = {
      {"config.toml -> ~/dotfiles/lazaret.toml, run in ~/dotfiles",
       [&] {
         s_.File("home/dotfiles/lazaret.toml", minimal);
         unlink(user_cfg.c_str());
         s_.Symlink(s_.Path("home/dotfiles/lazaret.toml"), "home/.config/lazaret/config.toml");
         return s_.Path("home/dotfiles");
       },
       "your configuration file HOME/.config/lazaret/config.toml resolves to "
       "HOME/dotfiles/lazaret.toml, which is inside the workspace"},
      {"a chain of symlinks into the workspace",
       [&] {
         s_.File("ws/deep/real.toml", minimal);
         s_.Symlink(s_.Path("ws/deep/real.toml"), "home/hop2");
         s_.Symlink(s_.Path("home/hop2"), "home/hop1");
         unlink(user_cfg.c_str());
         s_.Symlink(s_.Path("home/hop1"), "home/.config/lazaret/config.toml");
         return s_.workspace();
       },
       "resolves to WS/deep/real.toml, which is inside the workspace"},
      {"the configuration directory itself a symlink into the workspace",
       [&] {
         s_.File("ws/cfg/config.toml", minimal);
         unlink(user_cfg.c_str());
         rmdir(host_.LazaretConfigDir().c_str());
         s_.Symlink(s_.Path("ws/cfg"), "home/.config/lazaret");
         return s_.workspace();
       },
       "your Lazaret configuration directory HOME/.config/lazaret resolves to WS/cfg, which is "
       "inside the workspace"},
      {"a dangling symlink the agent could fill",
       [&] {
         unlink(user_cfg.c_str());
         s_.Symlink(s_.Path("ws/not-yet.toml"), "home/.config/lazaret/config.toml");
         return s_.workspace();
       },
       "is a symlink whose target does not exist"},
      {"--config inside the workspace",
       [&] {
         explicit_config = s_.File("ws/dev.toml", minimal);
         return s_.workspace();
       },
       "the --config file WS/dev.toml is inside the workspace"},
      {"config.toml inside a read-write volume",
       [&] {
         s_.File("home/dotfiles/lazaret.toml",
                 "[profiles.default]\nvolumes = [{ host = \"~/dotfiles\", container = \"/d\", "
                 "mode = \"rw\" }]\n");
         unlink(user_cfg.c_str());
         s_.Symlink(s_.Path("home/dotfiles/lazaret.toml"), "home/.config/lazaret/config.toml");
         return s_.workspace();
       },
       "resolves to HOME/dotfiles/lazaret.toml, which is inside a read-write volume of profile "
       "default (HOME/dotfiles)"},
      {"--config inside data_root",
       [&] {
         explicit_config = s_.File("home/.local/share/lazaret/x.toml", minimal);
         return s_.workspace();
       },
       "the --config file HOME/.local/share/lazaret/x.toml is inside data_root"},
      {"the state directory a symlink into the workspace",
       [&] {
         s_.Dir("ws/state");
         s_.Dir("home/.local/state");
         s_.Symlink(s_.Path("ws/state"), "home/.local/state/lazaret");
         return s_.workspace();
       },
       "Lazaret's state directory (your trust store) HOME/.local/state/lazaret resolves to "
       "WS/state, which is inside the workspace"},
  };
  for (const Case& c : cases) {
    reset();
    const std::string ws = c.arrange();
    LoadedConfig loaded = LoadForSelector(host_, Selector{ws, explicit_config});
    std::string expected = c.refusal;
    using Sub = std::pair<std::string, std::string>;
    for (const auto& [token, value] : {Sub{"HOME", s_.Path("home")}, Sub{"WS", s_.workspace()}}) {
      for (size_t at = expected.find(token); at != std::string::npos;
           at = expected.find(token, at + value.size())) {
        expected.replace(at, token.size(), value);
      }
    }
    EXPECT_FALSE(loaded.status().ok()) << c.name;
    EXPECT_THAT(Errors(loaded), HasSubstr(expected)) << c.name;
    EXPECT_THAT(loaded.profiles, IsEmpty()) << c.name;
    unlink(s_.Path("home/.local/state/lazaret").c_str());
  }
}

TEST_F(LoadForSelectorTest, ATrustedFileIsReadAtTheCanonicalPathThatWasChecked) {
  // config.toml -> ws/link -> ~/real.toml: the file is outside the
  // workspace today; the link in the workspace is the agent's to change.
  const std::string user_cfg = s_.Path("home/.config/lazaret/config.toml");
  s_.File("home/real.toml", "[profiles.default]\nimage = \"localhost/real:1\"\n");
  s_.Symlink(s_.Path("home/real.toml"), "ws/link");
  unlink(user_cfg.c_str());
  s_.Symlink(s_.Path("ws/link"), "home/.config/lazaret/config.toml");
  LoadedConfig c = LoadNow();
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  EXPECT_EQ(c.Profile("default")->image, "localhost/real:1");
  // Retargeted at a file of the agent's: refused, not read.
  s_.File("ws/evil.toml", "[profiles.default]\nimage = \"localhost/evil:1\"\n");
  s_.Symlink(s_.Path("ws/evil.toml"), "ws/link");
  c = LoadNow();
  EXPECT_THAT(Errors(c), HasSubstr("which is inside the workspace"));
  EXPECT_THAT(c.profiles, IsEmpty());
}

TEST_F(LoadForSelectorTest, ABrokenUserFileIsAnErrorToo) {
  s_.File("home/.config/lazaret/config.toml", "[storage]\ndata_root = 1\n");
  LoadedConfig c = LoadNow();
  EXPECT_THAT(Errors(c), HasSubstr(host_.UserConfigFile() + ":2:13: storage.data_root"));
}

}  // namespace
}  // namespace lazaret::config
