#include "services/vocab/auto_approve.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::vocab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Refused {
  const char* entry;
  const char* why;  // substring of the refusal
};

// THREATS.md "Escalation": prefixes an agent could extend into host code
// execution. Each must be refused when configured, whatever the layer.
TEST(AutoApproveTest, RefusesEntriesThatLetTheAgentRunArbitraryCode) {
  const Refused cases[] = {
      // git and every git subcommand (git log --output=~/.bashrc, -c core.pager, hooks).
      {"git", "options that run a program"},
      {"git log", "options that run a program"},
      {"git status", "options that run a program"},
      {"git-upload-pack", "git helper"},
      {"GIT log", "options that run a program"},
      // Program-running options.
      {"find", "command wrapper"},
      {"find . -name x", "command wrapper"},
      {"rg", "options that run a program"},
      {"rg --files", "options that run a program"},
      {"sed -n p", "interpreter"},
      {"awk", "interpreter"},
      {"tar tf", "options that run a program"},
      {"rsync", "options that run a program"},
      {"ssh host uptime", "options that run a program"},
      {"sort", "options that run a program"},
      {"wget", "options that run a program"},
      // Wrappers.
      {"env", "command wrapper"},
      {"env FOO=1", "command wrapper"},
      {"timeout 5", "command wrapper"},
      {"xargs", "command wrapper"},
      {"nice", "command wrapper"},
      {"nohup", "command wrapper"},
      {"sudo", "command wrapper"},
      {"doas ls", "command wrapper"},
      {"strace", "command wrapper"},
      // Shells and interpreters, with version suffixes.
      {"sh", "shell"},
      {"bash -c", "shell"},
      {"zsh", "shell"},
      {"busybox", "shell"},
      {"python3", "interpreter"},
      {"python3.11 -m http.server", "interpreter"},
      {"perl5.36", "interpreter"},
      {"node18", "interpreter"},
      {"lua5.4", "interpreter"},
      {"Rscript", "interpreter"},
      // Build and test runners, package managers, compilers.
      {"make", "build tool"},
      {"make test", "build tool"},
      {"npm test", "build tool"},
      {"npx", "build tool"},
      {"cargo test", "build tool"},
      {"pytest", "build tool"},
      {"go test", "build tool"},
      {"gcc-12", "build tool"},
      {"pip3 install", "build tool"},
      {"apt-get install", "options that run a program"},
      // Containers, schedulers, editors, openers, Lazaret.
      {"podman run", "containers"},
      {"docker", "containers"},
      {"crontab", "schedules"},
      {"vim", "editor"},
      {"less", "pager"},
      {"xdg-open", "options that run a program"},
      {"lazaret trust", "Lazaret itself"},
      {"lazaret-configd", "Lazaret itself"},
      // argv[0] must be a bare name.
      {"./git", "not a bare command name"},
      {"/workspace/bin/git", "not a bare command name"},
      {"/usr/bin/ls", "not a bare command name"},
      {"bin/tool", "not a bare command name"},
      {"FOO=1 ls", "not a bare command name"},
      {"-rf", "not a bare command name"},
      {".hidden", "not a bare command name"},
      // Shell metacharacters and control characters, quoted or not.
      {"ls; rm -rf ~", "contains ';'"},
      {"ls | sh", "contains '|'"},
      {"ls && id", "contains '&'"},
      {"echo $(id)", "contains '$'"},
      {"echo `id`", "contains '`'"},
      {"ls > ~/.bashrc", "contains '>'"},
      {"cat < /etc/passwd", "contains '<'"},
      {"ls\nid", "contains '\\x0a'"},
      {"ls\rid", "contains '\\x0d'"},
      {"ls\tx", "contains '\\x09'"},
      {"ls *", "contains '*'"},
      {"ls ~", "contains '~'"},
      {"ls 'a;b'", "contains ';'"},
      {"ls \\x", "contains '\\'"},
      {"ls (a)", "contains '('"},
      {"ls {a,b}", "contains '{'"},
      {"ls #x", "contains '#'"},
      {"ls !x", "contains '!'"},
      {"ls \xe2\x80\xae", "contains '\\xe2'"},  // bidi override
      // Empty or unparseable.
      {"", "empty"},
      {"   ", "empty"},
      {"''", "empty"},
      {"ls 'unterminated", "cannot be split"},
      // Cloud CLIs need a subcommand that runs no local code.
      {"aws", "too broad"},
      {"aws --profile x", "too broad"},
      {"aws configure set", "can install or configure code"},
      {"gh", "too broad"},
      {"gh extension install x", "can install or configure code"},
      {"gh alias set", "can install or configure code"},
  };
  for (const Refused& c : cases) {
    absl::StatusOr<CommandPrefix> p = CheckAutoApproveEntry(std::string(c.entry), nullptr);
    ASSERT_FALSE(p.ok()) << "accepted: " << c.entry;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.why)) << c.entry;
  }
}

TEST(AutoApproveTest, RefusesNulEvenInsideQuotes) {
  const std::string entry("ls '\0'", 6);
  EXPECT_FALSE(CheckAutoApproveEntry(entry, nullptr).ok());
}

struct Accepted {
  const char* entry;
  std::vector<std::string> argv;
};

TEST(AutoApproveTest, AcceptsNarrowReadOnlyCommandsAsArgvPrefixes) {
  const Accepted cases[] = {
      {"aws sts get-caller-identity", {"aws", "sts", "get-caller-identity"}},
      {"gh pr view", {"gh", "pr", "view"}},
      {"kubectl-free-name", {"kubectl-free-name"}},
      {"date", {"date"}},
      {"uname", {"uname"}},
      {"pass show 'work/api token'", {"pass", "show", "work/api token"}},
      {"op read op://vault/item/field", {"op", "read", "op://vault/item/field"}},
      {"notify-send --urgency=low", {"notify-send", "--urgency=low"}},
  };
  for (const Accepted& c : cases) {
    absl::StatusOr<CommandPrefix> p = CheckAutoApproveEntry(c.entry, nullptr);
    ASSERT_TRUE(p.ok()) << c.entry << ": " << p.status();
    EXPECT_EQ(p->argv, c.argv) << c.entry;
    EXPECT_EQ(p->text, c.entry);
  }
}

TEST(AutoApproveTest, WarnsAboutSingleWordPrefixEntriesOnly) {
  std::vector<std::string> warnings;
  ASSERT_TRUE(CheckAutoApproveEntry("date", &warnings).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("with any arguments"));

  warnings.clear();
  ASSERT_TRUE(CheckAutoApproveEntry("date", EntryForm::kExact, &warnings).ok());
  EXPECT_THAT(warnings, IsEmpty());
  ASSERT_TRUE(CheckAutoApproveEntry("aws sts get-caller-identity", &warnings).ok());
  EXPECT_THAT(warnings, IsEmpty());
}

TEST(AutoApproveTest, NormalizesVersionSuffixes) {
  EXPECT_EQ(NormalizeCommandName("python3.11"), "python");
  EXPECT_EQ(NormalizeCommandName("pip3"), "pip");
  EXPECT_EQ(NormalizeCommandName("gcc-12"), "gcc");
  EXPECT_EQ(NormalizeCommandName("clang++-14"), "clang++");
  EXPECT_EQ(NormalizeCommandName("Rscript"), "rscript");
  EXPECT_EQ(NormalizeCommandName("sha256sum"), "sha256sum");
  EXPECT_EQ(NormalizeCommandName("7"), "7");
}

TEST(AutoApproveTest, PrefixMatchIsElementWise) {
  const std::vector<std::string> entry = {"aws", "sts", "get-caller-identity"};
  EXPECT_TRUE(IsArgvPrefix(entry, {"aws", "sts", "get-caller-identity", "--query", "Account"}));
  EXPECT_TRUE(IsArgvPrefix(entry, entry));
  EXPECT_FALSE(IsArgvPrefix(entry, {"aws", "sts"}));
  EXPECT_FALSE(IsArgvPrefix(entry, {"aws", "sts", "get-caller-identityX"}));
  EXPECT_FALSE(IsArgvPrefix(entry, {"aws", "s3", "cp"}));
  EXPECT_THAT(entry, ElementsAre("aws", "sts", "get-caller-identity"));
}

}  // namespace
}  // namespace lazaret::vocab
