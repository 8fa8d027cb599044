// profiles.<name>.secrets and profiles.<name>.http through the whole
// pipeline: every key parsed, resolved and converted to the proto; each
// refusal with its key path; the workspace rules (secrets never, http only
// narrowing); and the entry-by-entry merge of both tables.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/configd/loader.h"
#include "services/configd/proto_convert.h"
#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using ::testing::ElementsAre;
using testing::Errors;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Load;
using testing::Scratch;

constexpr char kSecretsUser[] = R"(
[profiles.claude]
image = "localhost/x:1"
env = { OTHER = "literal" }
volumes = [{ host = "~/src", container = "/src" }]

[profiles.claude.secrets.anthropic]
from = "env:ANTHROPIC_API_KEY"
hosts = ["API.Anthropic.com"]
inject = "header:X-Api-Key"
sandbox_env = "ANTHROPIC_API_KEY"

[profiles.claude.secrets.gh]
command = ["gh", "auth", "token"]
hosts = ["api.github.com", "*.githubusercontent.com"]
inject = "bearer"
sandbox_env = "GH_TOKEN"

[profiles.claude.secrets.npm]
from = "file:~/.config/npm/token"
hosts = ["registry.npmjs.org"]
inject = "basic"

[profiles.claude.http."api.anthropic.com"]
allow = ["POST /v1/messages", "GET /v1/models"]

[profiles.claude.http."*.npmjs.org"]
allow = ["GET /"]
)";

std::vector<std::string> AllowTexts(const vocab::HttpRule& r) {
  std::vector<std::string> out;
  for (const vocab::HttpAllow& a : r.allow) out.push_back(a.method + " " + a.path_prefix);
  return out;
}

TEST(SecretsLoaderTest, EveryKeyIsResolvedInNameAndHostOrder) {
  Scratch s;
  s.Dir("home/src");
  LoadedConfig c = Load(s, kSecretsUser);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> p = c.Profile("claude");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->secrets.size(), 3u);
  const ResolvedSecret& anthropic = p->secrets[0];
  EXPECT_EQ(anthropic.name, "anthropic");
  EXPECT_EQ(anthropic.source, SecretSource::kEnv);
  EXPECT_EQ(anthropic.from, "ANTHROPIC_API_KEY");
  EXPECT_THAT(anthropic.hosts, ElementsAre("api.anthropic.com"));
  EXPECT_EQ(anthropic.inject, SecretInjection::kHeader);
  EXPECT_EQ(anthropic.header, "x-api-key");
  EXPECT_EQ(anthropic.sandbox_env, "ANTHROPIC_API_KEY");
  EXPECT_EQ(anthropic.layer, Layer::kUser);
  const ResolvedSecret& gh = p->secrets[1];
  EXPECT_EQ(gh.name, "gh");
  EXPECT_EQ(gh.source, SecretSource::kCommand);
  EXPECT_THAT(gh.command, ElementsAre("gh", "auth", "token"));
  EXPECT_THAT(gh.hosts, ElementsAre("api.github.com", "*.githubusercontent.com"));
  EXPECT_EQ(gh.inject, SecretInjection::kBearer);
  EXPECT_EQ(gh.sandbox_env, "GH_TOKEN");
  const ResolvedSecret& npm = p->secrets[2];
  EXPECT_EQ(npm.source, SecretSource::kFile);
  EXPECT_EQ(npm.from, s.Path("home/.config/npm/token"));  // ~ expanded, canonical
  EXPECT_EQ(npm.inject, SecretInjection::kBasic);
  EXPECT_EQ(npm.sandbox_env, "");
  ASSERT_EQ(p->http_rules.size(), 2u);
  EXPECT_EQ(p->http_rules[0].host, "*.npmjs.org");
  EXPECT_THAT(AllowTexts(p->http_rules[0]), ElementsAre("GET /"));
  EXPECT_EQ(p->http_rules[1].host, "api.anthropic.com");
  EXPECT_THAT(AllowTexts(p->http_rules[1]), ElementsAre("POST /v1/messages", "GET /v1/models"));
  std::vector<std::string> keys;
  for (const KeySource& k : p->sources) keys.push_back(k.key_path);
  EXPECT_THAT(keys, ::testing::IsSupersetOf({"profiles.claude.secrets.anthropic",
                                             "profiles.claude.secrets.npm",
                                             "profiles.claude.http.\"api.anthropic.com\""}));

  v1::ResolvedProfile pb;
  ToProto(*p, &pb);
  ASSERT_EQ(pb.secrets_size(), 3);
  EXPECT_EQ(pb.secrets(0).from_env(), "ANTHROPIC_API_KEY");
  EXPECT_EQ(pb.secrets(0).inject(), v1::SECRET_INJECTION_HEADER);
  EXPECT_EQ(pb.secrets(0).header(), "x-api-key");
  EXPECT_EQ(pb.secrets(0).sandbox_env(), "ANTHROPIC_API_KEY");
  EXPECT_THAT(pb.secrets(0).hosts(), ElementsAre("api.anthropic.com"));
  ASSERT_TRUE(pb.secrets(1).has_from_command());
  EXPECT_THAT(pb.secrets(1).from_command().argv(), ElementsAre("gh", "auth", "token"));
  EXPECT_EQ(pb.secrets(1).inject(), v1::SECRET_INJECTION_BEARER);
  EXPECT_EQ(pb.secrets(2).from_file(), s.Path("home/.config/npm/token"));
  EXPECT_EQ(pb.secrets(2).inject(), v1::SECRET_INJECTION_BASIC);
  EXPECT_EQ(pb.secrets(2).header(), "");
  ASSERT_EQ(pb.http_rules_size(), 2);
  EXPECT_EQ(pb.http_rules(1).host(), "api.anthropic.com");
  ASSERT_EQ(pb.http_rules(1).allow_size(), 2);
  EXPECT_EQ(pb.http_rules(1).allow(0).method(), "POST");
  EXPECT_EQ(pb.http_rules(1).allow(0).path_prefix(), "/v1/messages");
}

// A profile p1 with one secret `k` whose table is `secret`, plus `more`.
std::string WithSecret(const std::string& secret, const std::string& more = "") {
  return absl::StrCat("[profiles.p1]\nimage = \"localhost/x:1\"\n", more,
                      "\n[profiles.p1.secrets.k]\n", secret);
}

constexpr char kGood[] = "hosts = [\"api.example.com\"]\ninject = \"bearer\"\n";

// A profile p1 with one HTTP rule for api.example.com allowing `allow`.
std::string WithRule(const std::string& allow) {
  return absl::StrCat("[profiles.p1]\nimage = \"localhost/x:1\"\n",
                      "[profiles.p1.http.\"api.example.com\"]\nallow = ", allow, "\n");
}

std::string Quoted(const std::vector<std::string>& v) {
  std::vector<std::string> q;
  for (const std::string& e : v) q.push_back(absl::StrCat("\"", e, "\""));
  return absl::StrCat("[", absl::StrJoin(q, ", "), "]");
}

TEST(SecretsLoaderTest, EachMistakeIsRefusedWithItsKeyPath) {
  Scratch s;
  s.Dir("home/src");
  s.File("ws/key", "");
  s.Symlink(s.workspace() + "/key", "home/key-link");
  std::vector<std::string> hosts33;
  for (int i = 0; i < 33; ++i) hosts33.push_back(absl::StrCat("h", i, ".example.com"));
  std::vector<std::string> allow65;
  for (int i = 0; i < 65; ++i) allow65.push_back(absl::StrCat("GET /p", i));
  struct Case {
    std::string name;
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"unknown key", WithSecret(absl::StrCat("from = \"env:K\"\n", kGood, "host = \"x\"\n")),
       "profiles.p1.secrets.k.host: unknown key 'host'"},
      {"both sources",
       WithSecret(absl::StrCat("from = \"env:K\"\ncommand = [\"pass\", \"k\"]\n", kGood)),
       "profiles.p1.secrets.k: the secret has both 'from' and 'command'"},
      {"no source", WithSecret(kGood),
       "profiles.p1.secrets.k: the secret does not say where its value comes from"},
      {"bad from prefix", WithSecret(absl::StrCat("from = \"vault:k\"\n", kGood)),
       "profiles.p1.secrets.k.from: \"vault:k\" does not say where the value comes from"},
      {"bad variable", WithSecret(absl::StrCat("from = \"env:1K\"\n", kGood)),
       "\"env:1K\" does not name a host variable"},
      {"empty file", WithSecret(absl::StrCat("from = \"file:\"\n", kGood)),
       "\"file:\" names no file"},
      {"relative file", WithSecret(absl::StrCat("from = \"file:key\"\n", kGood)),
       "profiles.p1.secrets.k.from: secret \"k\": \"key\""},
      {"empty command", WithSecret(absl::StrCat("command = []\n", kGood)),
       "profiles.p1.secrets.k.command: the command is empty"},
      {"relative program", WithSecret(absl::StrCat("command = [\"bin/get\"]\n", kGood)),
       "profiles.p1.secrets.k.command[0]: \"bin/get\" is not a program"},
      {"empty hosts", WithSecret("from = \"env:K\"\nhosts = []\ninject = \"bearer\"\n"),
       "profiles.p1.secrets.k.hosts: the secret may be sent to no host"},
      {"no hosts", WithSecret("from = \"env:K\"\ninject = \"bearer\"\n"),
       "the secret has no 'hosts'"},
      {"too many hosts",
       WithSecret(
           absl::StrCat("from = \"env:K\"\nhosts = ", Quoted(hosts33), "\ninject = \"bearer\"\n")),
       "profiles.p1.secrets.k.hosts: more than 32 hosts"},
      {"bad host",
       WithSecret("from = \"env:K\"\nhosts = [\"api.example.com:443\"]\ninject = \"bearer\"\n"),
       "profiles.p1.secrets.k.hosts[0]: \"api.example.com:443\" is not a valid name"},
      {"no inject", WithSecret("from = \"env:K\"\nhosts = [\"a.example.com\"]\n"),
       "the secret has no 'inject'"},
      {"bad inject",
       WithSecret("from = \"env:K\"\nhosts = [\"a.example.com\"]\ninject = \"token\"\n"),
       "profiles.p1.secrets.k.inject: \"token\" is not a way to send a secret"},
      {"reserved header",
       WithSecret("from = \"env:K\"\nhosts = [\"a.example.com\"]\ninject = \"header:Host\"\n"),
       "profiles.p1.secrets.k.inject: \"Host\" frames or routes the request"},
      {"pseudo-header",
       WithSecret(
           "from = \"env:K\"\nhosts = [\"a.example.com\"]\ninject = \"header::authority\"\n"),
       "\":authority\" is an HTTP/2 pseudo-header"},
      {"bad header",
       WithSecret("from = \"env:K\"\nhosts = [\"a.example.com\"]\n"
                  "inject = \"header:x key\"\n"),
       "\"x key\" is not a header name"},
      {"bad sandbox_env",
       WithSecret(absl::StrCat("from = \"env:K\"\n", kGood, "sandbox_env = \"1KEY\"\n")),
       "profiles.p1.secrets.k.sandbox_env: \"1KEY\" is not a valid environment variable name"},
      {"sandbox_env in env",
       WithSecret(absl::StrCat("from = \"env:K\"\n", kGood, "sandbox_env = \"KEY\"\n"),
                  "env = { KEY = \"x\" }\n"),
       "profiles.p1.secrets.k.sandbox_env: secret \"k\" puts its placeholder in KEY, which "
       "profiles.p1.env also sets"},
      {"sandbox_env twice",
       WithSecret(absl::StrCat("from = \"env:K\"\n", kGood, "sandbox_env = \"KEY\"\n"),
                  absl::StrCat("[profiles.p1.secrets.a]\nfrom = \"env:A\"\n", kGood,
                               "sandbox_env = \"KEY\"\n")),
       "secret \"k\" puts its placeholder in KEY, as secret \"a\" does"},
      {"file in the workspace",
       WithSecret(absl::StrCat("from = \"file:", s.workspace(), "/key\"\n", kGood)),
       absl::StrCat("is read from \"", s.workspace(), "/key\", inside the workspace \"",
                    s.workspace(), "\", which the agent can read")},
      {"symlink into the workspace",
       WithSecret(absl::StrCat("from = \"file:~/key-link\"\n", kGood)),
       absl::StrCat("is read from \"", s.workspace(), "/key\" (\"", s.Path("home/key-link"),
                    "\"), inside the workspace")},
      {"file in the profile directory",
       WithSecret(absl::StrCat("from = \"file:~/.local/share/lazaret/p1/key\"\n", kGood)),
       "inside the profile directory (mounted into the sandbox)"},
      {"file in data_root",
       WithSecret(absl::StrCat("from = \"file:~/.local/share/lazaret/key\"\n", kGood)),
       "inside data_root (profile directories are mounted into sandboxes)"},
      {"file in a read-only volume",
       WithSecret(absl::StrCat("from = \"file:~/src/key\"\n", kGood),
                  "volumes = [{ host = \"~/src\", container = \"/src\" }]\n"),
       "inside a volume of profiles.p1 (mounted at /src)"},
      {"bad secret name",
       WithSecret(absl::StrCat("from = \"env:K\"\n", kGood),
                  "[profiles.p1.secrets.\"a.b\"]\nfrom = \"env:K\"\nhosts = [\"a.example.com\"]\n"
                  "inject = \"bearer\"\n"),
       "\"a.b\" is not a valid secret name"},
      {"bad method", WithRule("[\"get /v1\"]"),
       "profiles.p1.http.\"api.example.com\".allow[0]: \"get\" is not in upper case; methods "
       "are case-sensitive: write \"GET\""},
      {"not a token", WithRule("[\"GE(T /v1\"]"), "\"GE(T\" is not an HTTP method"},
      {"no prefix", WithRule("[\"GET\"]"), "\"GET\" is not \"METHOD /path-prefix\""},
      {"relative prefix", WithRule("[\"GET v1/models\"]"), "does not start with \"/\""},
      {"dot-dot prefix", WithRule("[\"GET /v1/../admin\"]"), "it has a \"..\" segment"},
      {"dot prefix", WithRule("[\"GET /v1/./x\"]"), "it has a \".\" segment"},
      {"double slash", WithRule("[\"GET /v1//x\"]"), "it has an empty segment"},
      {"query", WithRule("[\"GET /v1?x=1\"]"), "'?' and '#'"},
      {"fragment", WithRule("[\"GET /v1#x\"]"), "'?' and '#'"},
      {"space", WithRule("[\"GET /v1 x\"]"), "printable ASCII without spaces"},
      {"too many entries", WithRule(Quoted(allow65)),
       "profiles.p1.http.\"api.example.com\".allow: more than 64 entries"},
      {"no entries", WithRule("[]"), "the rule allows nothing"},
      {"no allow",
       "[profiles.p1]\nimage = \"localhost/x:1\"\n[profiles.p1.http.\"a.example.com\"]\n",
       "profiles.p1.http.\"a.example.com\": the rule has no 'allow'"},
      {"unknown rule key",
       "[profiles.p1]\nimage = \"localhost/x:1\"\n[profiles.p1.http.\"a.example.com\"]\n"
       "allow = [\"GET /\"]\ndeny = [\"POST /\"]\n",
       "profiles.p1.http.\"a.example.com\".deny: unknown key 'deny'"},
      {"bad rule host",
       "[profiles.p1]\nimage = \"localhost/x:1\"\n[profiles.p1.http.\"*\"]\nallow = [\"GET /\"]\n",
       "\"*\" alone would match every name"},
      {"host twice",
       "[profiles.p1]\nimage = \"localhost/x:1\"\n[profiles.p1.http.\"A.example.com\"]\n"
       "allow = [\"GET /\"]\n[profiles.p1.http.\"a.example.com\"]\nallow = [\"GET /\"]\n",
       "\"a.example.com\" has two tables"},
  };
  for (const Case& c : cases) {
    LoadedConfig loaded = Load(s, c.text);
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(Errors(loaded), HasSubstr(c.expected)) << c.name;
    EXPECT_THAT(loaded.profiles, IsEmpty()) << c.name;
  }
}

TEST(SecretsLoaderTest, AWorkspaceFileMayNeverNameSecretsTrustedOrNot) {
  Scratch s;
  const std::string user = "[profiles.p1]\nimage = \"localhost/x:1\"\n";
  const std::string workspace = absl::StrCat("[profiles.p1.secrets.k]\nfrom = \"env:K\"\n", kGood);
  for (bool trusted : {false, true}) {
    LoadedConfig c = Load(s, user, workspace, "", trusted);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << trusted;
    EXPECT_THAT(Errors(c), HasSubstr(s.workspace() + "/lazaret.toml:")) << trusted;
    EXPECT_THAT(Errors(c), HasSubstr("profiles.p1.secrets: a workspace file may not name secrets"))
        << trusted;
    EXPECT_THAT(Errors(c), HasSubstr("define secrets in your own configuration file")) << trusted;
  }
  // The same table in --config is the user's own.
  LoadedConfig c = Load(s, user, "", workspace);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> p = c.Profile("p1");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->secrets.size(), 1u);
  EXPECT_EQ(p->secrets[0].layer, Layer::kExplicit);
}

constexpr char kUserRules[] = R"(
[profiles.p1]
image = "localhost/x:1"
[profiles.p1.http."api.example.com"]
allow = ["POST /v1/messages", "* /v1/models"]
[profiles.p1.http."*.example.org"]
allow = ["GET /"]
)";

std::string WorkspaceRule(const std::string& host, const std::string& allow) {
  return absl::StrCat("[profiles.p1.http.\"", host, "\"]\nallow = ", allow, "\n");
}

TEST(SecretsLoaderTest, AWorkspaceHttpRuleMayOnlyNarrowTheRuleThatDecidesForItsHost) {
  Scratch s;
  const std::pair<std::string, std::string> admitted[] = {
      {"api.example.com", "[\"POST /v1/messages/batches\", \"GET /v1/models/x\"]"},
      {"api.example.com", "[\"* /v1/models\"]"},
      {"x.example.org", "[\"GET /pkg/\"]"},   // under the wildcard rule
      {"*.sub.example.org", "[\"GET /a\"]"},  // a narrower wildcard
      {"other.net", "[\"DELETE /\"]"},        // no rule: any rule narrows
      {"example.org", "[\"* /\"]"},           // "*.example.org" does not cover it
  };
  for (const auto& [host, allow] : admitted) {
    LoadedConfig c = Load(s, kUserRules, WorkspaceRule(host, allow));
    EXPECT_TRUE(c.status().ok()) << host << " " << allow << "\n" << Errors(c);
  }
  struct Refused {
    std::string host;
    std::string allow;
    std::string expected;
  };
  const Refused refused[] = {
      {"api.example.com", "[\"GET /v1/messages\"]",
       "allows \"GET /v1/messages\" to \"api.example.com\", which no entry of "
       "profiles.p1.http.\"api.example.com\" in your configuration admits"},
      {"api.example.com", "[\"POST /v1/messagesX\"]", "allows \"POST /v1/messagesX\""},
      {"api.example.com", "[\"* /v1/\"]", "allows \"* /v1/\""},
      {"api.example.com", "[\"POST /v1\"]", "allows \"POST /v1\""},
      {"x.example.org", "[\"POST /\"]",
       "allows \"POST /\" to \"x.example.org\", which no entry of "
       "profiles.p1.http.\"*.example.org\""},
      {"*.example.org", "[\"* /\"]", "allows \"* /\" to \"*.example.org\""},
  };
  for (const Refused& r : refused) {
    LoadedConfig c = Load(s, kUserRules, WorkspaceRule(r.host, r.allow));
    EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied) << r.host << " " << r.allow;
    EXPECT_THAT(Errors(c), HasSubstr(r.expected)) << r.host << " " << r.allow;
    EXPECT_THAT(Errors(c), HasSubstr("lazaret trust")) << r.host;
    // Trusting the exact file lets it widen.
    c = Load(s, kUserRules, WorkspaceRule(r.host, r.allow), "", /*workspace_trusted=*/true);
    EXPECT_TRUE(c.status().ok()) << r.host << " " << r.allow << "\n" << Errors(c);
  }
}

TEST(SecretsLoaderTest, HttpRulesAndSecretsMergeHostByHostAndNameByName) {
  Scratch s;
  // The workspace narrows api.example.com and adds a rule; the user's
  // wildcard rule stays.
  LoadedConfig c = Load(s, kUserRules,
                        WorkspaceRule("api.example.com", "[\"POST /v1/messages\"]") +
                            WorkspaceRule("other.net", "[\"GET /\"]"));
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  absl::StatusOr<ResolvedProfile> p = c.Profile("p1");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::vector<vocab::HttpRule>& rules = p->http_rules;
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].host, "*.example.org");
  EXPECT_EQ(rules[1].host, "api.example.com");
  EXPECT_THAT(AllowTexts(rules[1]), ElementsAre("POST /v1/messages"));
  EXPECT_EQ(rules[2].host, "other.net");
  // --config replaces one secret whole and adds another.
  const std::string user = absl::StrCat(
      "[profiles.p1]\nimage = \"localhost/x:1\"\n[profiles.p1.secrets.a]\nfrom = \"env:A\"\n",
      kGood, "sandbox_env = \"A\"\n");
  const std::string explicit_config =
      absl::StrCat("[profiles.p1.secrets.a]\ncommand = [\"pass\", \"a\"]\n", kGood,
                   "[profiles.p1.secrets.b]\nfrom = \"env:B\"\n", kGood);
  c = Load(s, user, "", explicit_config);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  p = c.Profile("p1");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::vector<ResolvedSecret>& secrets = p->secrets;
  ASSERT_EQ(secrets.size(), 2u);
  EXPECT_EQ(secrets[0].name, "a");
  EXPECT_EQ(secrets[0].source, SecretSource::kCommand);
  EXPECT_EQ(secrets[0].sandbox_env, "");  // the whole table was replaced
  EXPECT_EQ(secrets[1].name, "b");
}

}  // namespace
}  // namespace lazaret::config
