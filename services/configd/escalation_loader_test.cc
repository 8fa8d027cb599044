// The [escalation] keys end to end through the loader: the two forms of an
// auto_approve entry, the timeouts, their narrowing and their conversion.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/configd/loader.h"
#include "services/configd/proto_convert.h"
#include "services/configd/schema.h"
#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using testing::AllErrors;
using ::testing::ElementsAre;
using testing::Errors;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Load;
using ::testing::Not;
using testing::Parsed;
using testing::ParseText;
using testing::Scratch;
using testing::SourceOf;

TEST(EscalationSchemaTest, AutoApproveTakesStringsPrefixTablesAndExactTables) {
  Parsed p = ParseText(R"([escalation]
auto_approve = [
  "gh pr view",
  { prefix = "aws sts get-caller-identity" },
  { exact = "cat /etc/os-release" },
]
)");
  ASSERT_FALSE(p.diags.has_errors()) << AllErrors(p.diags);
  EXPECT_THAT(p.diags.warnings(), IsEmpty());
  const std::vector<Setting<vocab::CommandPrefix>>& e = p.layer.auto_approve->value;
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].value, (vocab::CommandPrefix{"gh pr view", {"gh", "pr", "view"}, false, {}}));
  EXPECT_EQ(e[1].value,
            (vocab::CommandPrefix{
                "aws sts get-caller-identity", {"aws", "sts", "get-caller-identity"}, false, {}}));
  EXPECT_EQ(e[2].value,
            (vocab::CommandPrefix{"cat /etc/os-release", {"cat", "/etc/os-release"}, true, {}}));
  EXPECT_EQ(e[2].origin.key_path, "escalation.auto_approve[2].exact");
  EXPECT_EQ(e[2].origin.line, 5u);
  EXPECT_EQ(e[0].origin.key_path, "escalation.auto_approve[0]");
}

TEST(EscalationSchemaTest, AutoApprovePrefixTablesMayListOptions) {
  Parsed p = ParseText(R"([escalation]
auto_approve = [
  { prefix = "gh pr view", options = ["--json", "--comments"] },
  { prefix = "aws sts get-caller-identity", options = ["--output", "--query"] },
  { prefix = "ls", options = [] },
]
)");
  ASSERT_FALSE(p.diags.has_errors()) << AllErrors(p.diags);
  const std::vector<Setting<vocab::CommandPrefix>>& e = p.layer.auto_approve->value;
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].value, (vocab::CommandPrefix{
                            "gh pr view", {"gh", "pr", "view"}, false, {"--json", "--comments"}}));
  EXPECT_THAT(e[1].value.options, ElementsAre("--output", "--query"));
  EXPECT_THAT(e[2].value.options, IsEmpty());

  // The proto carries them to the broker.
  Scratch s;
  LoadedConfig c = Load(
      s, "[escalation]\nauto_approve = [{ prefix = \"gh pr view\", options = [\"--json\"] }]\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  v1::ResolvedProfile pb;
  ToProto(*c.Profile(""), &pb);
  ASSERT_EQ(pb.escalation().auto_approve_size(), 1);
  EXPECT_THAT(pb.escalation().auto_approve(0).options(), ElementsAre("--json"));
}

// Issue 20 item 3: each error names the entry, what is wrong and how to fix it.
TEST(EscalationSchemaTest, AutoApproveOptionErrorsNameTheEntryAndTheFix) {
  struct Case {
    const char* entry;
    const char* error;
  };
  const Case cases[] = {
      {"{ prefix = \"gh pr view\", options = [\"json\"] }",
       "config.toml:2:52: escalation.auto_approve[0].options: \"gh pr view\" is refused: options "
       "lists 'json', which is not an option word"},
      {"{ prefix = \"gh pr view\", options = [\"--json=title\"] }", "'--json=title', which is not"},
      {"{ prefix = \"gh pr view\", options = [\"-\"] }", "'-', which is not an option word"},
      {"{ prefix = \"gh pr view\", options = [\"--a;b\"] }", "'--a;b', which is not"},
      {"{ prefix = \"gh pr view\", options = [\"--web\", \"--web\"] }", "lists '--web' twice"},
      {"{ prefix = \"gh pr view\", options = \"--web\" }",
       "escalation.auto_approve[0].options: expected an array, found a string"},
      {"{ prefix = \"gh pr view\", options = [7] }",
       "escalation.auto_approve[0].options[0]: expected a string, found an integer"},
      {"{ exact = \"gh pr view 1\", options = [\"--web\"] }",
       "escalation.auto_approve[0].options: an exact entry has no options"},
      {"{ prefix = \"date\", options = [\"-f\"] }",
       "\"date\" is refused: options lists '-f' of 'date' reads the file its value names"},
      {"{ prefix = \"dmesg\", options = [\"-rF\"] }",
       "options lists '-rF' (taken as '-F') of 'dmesg' reads the log file"},
      {"{ prefix = \"tree\", options = [\"-o\"] }", "'-o' of 'tree' writes its output"},
      {"{ prefix = \"gh api\", options = [\"-F\"] }", "'-F' of 'gh' reads the file"},
      {"{ prefix = \"aws sts get-caller-identity\", options = [\"--debug\"] }",
       "'--debug' of 'aws' prints the signed request"},
      {"{ prefix = \"date -f\" }",
       "\"date -f\" is refused: ends in the option '-f': the agent's next word would be its "
       "value, and '-f' of 'date' reads the file"},
      {"\"ls -l\"",
       "\"ls -l\" is refused: ends in the option '-l': the agent's next word could be that "
       "option's value"},
      {"{ options = [\"--web\"] }", "escalation.auto_approve[0]: the table names no command"},
  };
  for (const Case& c : cases) {
    Parsed p = ParseText(absl::StrCat("[escalation]\nauto_approve = [", c.entry, "]\n"));
    EXPECT_THAT(AllErrors(p.diags), HasSubstr(c.error)) << c.entry;
    EXPECT_FALSE(p.layer.auto_approve) << c.entry;
  }
}

TEST(EscalationSchemaTest, AutoApproveErrorsNameFileLineAndKey) {
  struct Case {
    const char* entry;
    const char* error;
  };
  const Case cases[] = {
      {"{ exact = \"cat notes.txt\" }",
       "config.toml:2:27: escalation.auto_approve[0].exact: \"cat notes.txt\" is refused: "
       "'notes.txt' is not an absolute path"},
      {"{ exact = \"bash -c x\" }",
       "escalation.auto_approve[0].exact: \"bash -c x\" is refused: 'bash' is a runner of code or "
       "shells"},
      {"{ prefix = \"cat /etc/os-release\" }",
       "escalation.auto_approve[0].prefix: \"cat /etc/os-release\" is refused: 'cat' is a reader"},
      {"\"cat /etc/os-release\"", "'cat' is a reader of arbitrary paths"},
      {"{ exact = \"date\", prefix = \"date\" }",
       "config.toml:2:17: escalation.auto_approve[0]: the table has both 'prefix' and 'exact'"},
      {"{}", "escalation.auto_approve[0]: the table names no command"},
      {"{ exact = \"date\", why = \"x\" }",
       "config.toml:2:35: escalation.auto_approve[0].why: unknown key 'why'"},
      {"{ exakt = \"date\" }", "escalation.auto_approve[0].exakt: unknown key 'exakt'"},
      {"{ exact = 7 }", "escalation.auto_approve[0].exact: expected a string, found an integer"},
      {"{ exact = [\"cat\", \"/etc/os-release\"] }",
       "escalation.auto_approve[0].exact: expected a string, found an array"},
      {"42",
       "escalation.auto_approve[0]: expected a string \"cmd args\" or a table { prefix = "
       "\"cmd args\", options = [\"--opt\"] } or { exact = \"cmd args\" }, found an integer"},
  };
  for (const Case& c : cases) {
    Parsed p = ParseText(absl::StrCat("[escalation]\nauto_approve = [", c.entry, "]\n"));
    EXPECT_THAT(AllErrors(p.diags), HasSubstr(c.error)) << c.entry;
    EXPECT_FALSE(p.layer.auto_approve) << c.entry;
  }
}

TEST(EscalationSchemaTest, TimeoutsAreWholeSecondsFromOneToADay) {
  Parsed p = ParseText(R"([escalation]
command_timeout = 1
approval_timeout = 86400
[profiles.ci]
image = "localhost/x:1"
command_timeout = 600
)");
  ASSERT_FALSE(p.diags.has_errors()) << AllErrors(p.diags);
  EXPECT_EQ(p.layer.command_timeout->value, 1u);
  EXPECT_EQ(p.layer.command_timeout->origin.key_path, "escalation.command_timeout");
  EXPECT_EQ(p.layer.approval_timeout->value, 86400u);
  EXPECT_EQ(p.layer.profiles.at("ci").command_timeout->value, 600u);
  EXPECT_EQ(p.layer.profiles.at("ci").command_timeout->origin.line, 6u);

  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"[escalation]\ncommand_timeout = 0\n",
       "config.toml:2:19: escalation.command_timeout: 0 seconds is out of range: the value must be "
       "between 1 and 86400 seconds"},
      {"[escalation]\napproval_timeout = 86401\n",
       "escalation.approval_timeout: 86401 seconds is out of range"},
      {"[escalation]\ncommand_timeout = -5\n", "-5 seconds is out of range"},
      {"[escalation]\ncommand_timeout = \"60\"\n",
       "escalation.command_timeout: expected an integer number of seconds (1 to 86400), found a "
       "string"},
      {"[escalation]\ncommand_timeout = 1.5\n", "found a float"},
      {"[profiles.ci]\nimage = \"localhost/x:1\"\ncommand_timeout = 100000\n",
       "profiles.ci.command_timeout: 100000 seconds is out of range"},
      {"[profiles.ci]\napproval_timeout = 10\n",
       "profiles.ci.approval_timeout: unknown key 'approval_timeout'"},
      {"[escalation]\ncommand_timeut = 10\n", "did you mean 'command_timeout'?"},
      {"[escalation]\nrate_limit = 0\n",
       "escalation.rate_limit: 0 requests per second is out of range: the value must be between 1 "
       "and 100000 requests per second"},
      {"[escalation]\nrate_limit = \"10\"\n",
       "expected an integer number of requests per second (1 to 100000), found a string"},
      {"[escalation]\napprover = \"sometimes\"\n",
       "escalation.approver: \"sometimes\" is not an approver"},
      {"[escalation]\napprover = \"Remote\"\n", "is \"inline\" (a prompt in the lazaret run"},
      {"[escalation]\napprover = true\n", "escalation.approver: expected a string"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(AllErrors(ParseText(c.text).diags), HasSubstr(c.error)) << c.text;
  }
}

TEST(EscalationLoaderTest, DefaultsComeFromTheEmbeddedDefault) {
  Scratch s;
  LoadedConfig c = Load(s, "");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  ResolvedProfile p = *c.Profile("");
  EXPECT_EQ(p.command_timeout_seconds, 60u);
  EXPECT_EQ(p.approval_timeout_seconds, 300u);
  EXPECT_EQ(p.rate_limit, 10u);
  EXPECT_EQ(SourceOf(p, "escalation.rate_limit")->layer, Layer::kEmbeddedDefault);
  EXPECT_EQ(SourceOf(p, "escalation.command_timeout")->layer, Layer::kEmbeddedDefault);
  EXPECT_EQ(SourceOf(p, "escalation.approval_timeout")->layer, Layer::kEmbeddedDefault);
  EXPECT_EQ(p.approver, "inline");
  v1::ResolvedProfile pb;
  ToProto(p, &pb);
  EXPECT_EQ(pb.escalation().approver(), v1::EscalationPolicy::APPROVER_INLINE);
}

TEST(EscalationLoaderTest, ApproverRemoteFromAnyLayer) {
  Scratch s;
  LoadedConfig c = Load(s, "[escalation]\napprover = \"remote\"\n");
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  ResolvedProfile p = *c.Profile("");
  EXPECT_EQ(p.approver, "remote");
  EXPECT_EQ(SourceOf(p, "escalation.approver")->layer, Layer::kUser);
  v1::ResolvedProfile pb;
  ToProto(p, &pb);
  EXPECT_EQ(pb.escalation().approver(), v1::EscalationPolicy::APPROVER_REMOTE);
}

constexpr char kEscalationUser[] = R"(
[escalation]
auto_approve = ["gh pr view", { exact = "cat /etc/os-release" }]
command_timeout = 120
approval_timeout = 600
[profiles.claude-code]
image = "docker.io/library/node:22.11.0"
command_timeout = 30
[profiles.other]
image = "docker.io/library/node:22.11.0"
)";

TEST(EscalationLoaderTest, AProfileCommandTimeoutOverridesTheGlobalOne) {
  Scratch s;
  LoadedConfig c = Load(s, kEscalationUser);
  ASSERT_TRUE(c.status().ok()) << Errors(c);
  ResolvedProfile cc = *c.Profile("claude-code");
  EXPECT_EQ(cc.command_timeout_seconds, 30u);
  EXPECT_EQ(SourceOf(cc, "profiles.claude-code.command_timeout")->layer, Layer::kUser);
  EXPECT_EQ(SourceOf(cc, "escalation.command_timeout"), nullptr);
  EXPECT_EQ(cc.approval_timeout_seconds, 600u);
  ResolvedProfile other = *c.Profile("other");
  EXPECT_EQ(other.command_timeout_seconds, 120u);
  EXPECT_EQ(SourceOf(other, "escalation.command_timeout")->layer, Layer::kUser);

  // The proto carries the forms, the text as written and the layer.
  v1::ResolvedProfile pb;
  ToProto(cc, &pb);
  EXPECT_EQ(pb.escalation().command_timeout_seconds(), 30u);
  EXPECT_EQ(pb.escalation().approval_timeout_seconds(), 600u);
  EXPECT_EQ(pb.escalation().rate_limit(), 10u);
  ASSERT_EQ(pb.escalation().auto_approve_size(), 2);
  EXPECT_FALSE(pb.escalation().auto_approve(0).exact());
  EXPECT_EQ(pb.escalation().auto_approve(0).text(), "gh pr view");
  EXPECT_THAT(pb.escalation().auto_approve(0).argv(), ElementsAre("gh", "pr", "view"));
  EXPECT_TRUE(pb.escalation().auto_approve(1).exact());
  EXPECT_EQ(pb.escalation().auto_approve(1).text(), "cat /etc/os-release");
  EXPECT_EQ(pb.escalation().auto_approve(1).source(), common::v1::CONFIG_LAYER_USER);
}

struct EscalationNarrowCase {
  const char* name;
  const char* workspace;
  const char* refusal;  // nullptr: accepted without trust
};

TEST(EscalationLoaderTest, AnUntrustedWorkspaceMayOnlyLowerTimeoutsAndNarrowEntries) {
  const EscalationNarrowCase cases[] = {
      {"lower global timeouts", "[escalation]\ncommand_timeout = 5\napproval_timeout = 60\n",
       nullptr},
      {"same timeouts", "[escalation]\ncommand_timeout = 120\napproval_timeout = 600\n", nullptr},
      {"lower profile timeout", "[profiles.claude-code]\ncommand_timeout = 29\n", nullptr},
      {"profile timeout up to the global one", "[profiles.other]\ncommand_timeout = 120\n",
       nullptr},
      {"the same exact entry",
       "[escalation]\nauto_approve = [{ exact = \"cat /etc/os-release\" }]\n", nullptr},
      {"an exact entry under a prefix entry",
       "[escalation]\nauto_approve = [{ exact = \"gh pr view 12\" }]\n", nullptr},
      {"a longer prefix entry", "[escalation]\nauto_approve = [{ prefix = \"gh pr view 12\" }]\n",
       nullptr},
      {"lower rate_limit", "[escalation]\nrate_limit = 2\n", nullptr},
      {"raise rate_limit", "[escalation]\nrate_limit = 11\n",
       "escalation.rate_limit: raises escalation.rate_limit to 11 requests per second; your "
       "configuration allows 10"},
      {"raise command_timeout", "[escalation]\ncommand_timeout = 121\n",
       "config:2:19: escalation.command_timeout: raises the timeout to 121 seconds; "
       "escalation.command_timeout of your configuration is 120 seconds"},
      {"raise approval_timeout", "[escalation]\napproval_timeout = 86400\n",
       "escalation.approval_timeout: raises the timeout to 86400 seconds"},
      {"raise a profile timeout", "[profiles.claude-code]\ncommand_timeout = 31\n",
       "profiles.claude-code.command_timeout: raises the timeout to 31 seconds; "
       "profiles.claude-code.command_timeout of your configuration is 30 seconds"},
      {"a profile timeout above the global one", "[profiles.other]\ncommand_timeout = 121\n",
       "profiles.other.command_timeout: raises the timeout to 121 seconds; "
       "escalation.command_timeout of your configuration is 120 seconds"},
      {"an exact entry the user has not", "[escalation]\nauto_approve = [{ exact = \"date\" }]\n",
       "escalation.auto_approve[0].exact: auto-approves exactly \"date\", which no "
       "escalation.auto_approve entry of your configuration covers"},
      {"an exact entry only as a shorter prefix",
       "[escalation]\nauto_approve = [{ exact = \"gh pr\" }]\n", "auto-approves exactly \"gh pr\""},
      {"an exact entry with more arguments",
       "[escalation]\nauto_approve = [{ exact = \"cat /etc/os-release /etc/shadow\" }]\n",
       "auto-approves exactly \"cat /etc/os-release /etc/shadow\""},
  };
  Scratch s;
  for (const EscalationNarrowCase& c : cases) {
    LoadedConfig loaded = Load(s, kEscalationUser, c.workspace);
    if (c.refusal == nullptr) {
      EXPECT_TRUE(loaded.status().ok()) << c.name << "\n" << Errors(loaded);
      continue;
    }
    std::string expected = c.refusal;
    if (expected.rfind("config:", 0) == 0) {
      expected.replace(0, 6, s.workspace() + "/lazaret.toml");
    }
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied) << c.name;
    EXPECT_THAT(Errors(loaded), HasSubstr(expected)) << c.name;
    EXPECT_THAT(loaded.profiles, IsEmpty()) << c.name;
    // Trusted, the same file is accepted.
    EXPECT_TRUE(Load(s, kEscalationUser, c.workspace, "", /*workspace_trusted=*/true).status().ok())
        << c.name;
  }
  // A lowered value is what the profile gets.
  LoadedConfig lowered = Load(s, kEscalationUser, "[profiles.claude-code]\ncommand_timeout = 3\n");
  ASSERT_TRUE(lowered.status().ok()) << Errors(lowered);
  EXPECT_EQ(lowered.Profile("claude-code")->command_timeout_seconds, 3u);
  EXPECT_EQ(lowered.Profile("other")->command_timeout_seconds, 120u);
}

// A workspace entry may not admit an option the user's entry does not.
TEST(EscalationLoaderTest, AWorkspaceEntryMayNotAllowAnOptionTheUsersDoesNot) {
  constexpr char kUserWithOptions[] =
      "[escalation]\nauto_approve = [{ prefix = \"gh pr view\", options = [\"--json\", "
      "\"--comments\"] }]\n";
  const EscalationNarrowCase cases[] = {
      {"fewer options",
       "[escalation]\nauto_approve = [{ prefix = \"gh pr view\", options = [\"--json\"] }]\n",
       nullptr},
      {"no options", "[escalation]\nauto_approve = [\"gh pr view\"]\n", nullptr},
      {"a longer prefix", "[escalation]\nauto_approve = [\"gh pr view 12\"]\n", nullptr},
      {"an exact entry with a listed option",
       "[escalation]\nauto_approve = [{ exact = \"gh pr view --json title 12\" }]\n", nullptr},
      {"an option the user does not list",
       "[escalation]\nauto_approve = [{ prefix = \"gh pr view\", options = [\"--json\", "
       "\"--web\"] }]\n",
       "auto-approves \"gh pr view\", which no escalation.auto_approve entry of your "
       "configuration covers"},
      {"an exact entry with an option the user does not list",
       "[escalation]\nauto_approve = [{ exact = \"gh pr view --web 12\" }]\n",
       "auto-approves exactly \"gh pr view --web 12\""},
      {"an exact entry with a path",
       "[escalation]\nauto_approve = [{ exact = \"gh pr view /etc/passwd\" }]\n",
       "auto-approves exactly \"gh pr view /etc/passwd\""},
  };
  Scratch s;
  for (const EscalationNarrowCase& c : cases) {
    LoadedConfig loaded = Load(s, kUserWithOptions, c.workspace);
    if (c.refusal == nullptr) {
      EXPECT_TRUE(loaded.status().ok()) << c.name << "\n" << Errors(loaded);
      continue;
    }
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied) << c.name;
    EXPECT_THAT(Errors(loaded), HasSubstr(c.refusal)) << c.name;
  }
}

TEST(EscalationLoaderTest, AnExactEntryOfTheUserDoesNotAdmitAPrefixFromTheWorkspace) {
  Scratch s;
  LoadedConfig c = Load(s, "[escalation]\nauto_approve = [{ exact = \"uname\" }]\n",
                        "[escalation]\nauto_approve = [\"uname\"]\n");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Errors(c), HasSubstr("auto-approves \"uname\", which no"));
  EXPECT_THAT(Errors(c), Not(HasSubstr("exactly")));
}

TEST(EscalationLoaderTest, AnExactEntryMayNotNameAFileTheAgentCanReplace) {
  Scratch s;
  s.File("ws/notes.txt", "x");
  s.Dir("home/.local/share/lazaret/default");
  s.Symlink(s.workspace(), "home/link-to-ws");
  const std::string data_root = s.Path("home/.local/share/lazaret");
  struct Case {
    std::string entry;
    std::string error;  // empty: accepted
  };
  const Case cases[] = {
      {"cat " + s.workspace() + "/notes.txt",
       absl::StrCat("names \"", s.workspace(), "/notes.txt\", inside the workspace \"",
                    s.workspace(), "\", which the agent can write")},
      {"cat " + s.Path("home/link-to-ws/notes.txt"),
       absl::StrCat("(canonical \"", s.workspace(), "/notes.txt\"), inside the workspace")},
      {"tail --file=" + s.workspace() + "/log", "inside the workspace"},
      {"cat " + data_root + "/default/x", "inside data_root"},
      {"cat /etc/os-release", ""},
      {"cat " + s.Path("home/notes.txt"), ""},
  };
  for (const Case& c : cases) {
    LoadedConfig loaded =
        Load(s, absl::StrCat("[escalation]\nauto_approve = [{ exact = \"", c.entry, "\" }]\n"));
    if (c.error.empty()) {
      EXPECT_TRUE(loaded.status().ok()) << c.entry << "\n" << Errors(loaded);
    } else {
      EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument) << c.entry;
      EXPECT_THAT(Errors(loaded), HasSubstr(c.error)) << c.entry;
    }
  }
}

}  // namespace
}  // namespace lazaret::config
