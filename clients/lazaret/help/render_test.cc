#include "clients/lazaret/help/render.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/help/help.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::help {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(RoffEscapeTest, MinusBackslashAndLeadingControlCharactersAreLiteral) {
  EXPECT_EQ(RoffEscape("--json"), "\\-\\-json");
  EXPECT_EQ(RoffEscape("Ctrl-\\ d"), "Ctrl\\-\\e d");
  EXPECT_EQ(RoffEscape(".TH evil"), "\\&.TH evil");
  EXPECT_EQ(RoffEscape("'br"), "\\&'br");
  // Only the first character can start a request.
  EXPECT_EQ(RoffEscape("a.b 'c'"), "a.b 'c'");
  EXPECT_EQ(RoffEscape(""), "");
}

TEST(HelpTableTest, TopLevelUsageKeepsItsLayout) {
  const std::string usage = TopLevelUsage();
  EXPECT_TRUE(absl::StartsWith(usage, "usage: lazaret <command> [args]\n\ncommands:\n"));
  EXPECT_THAT(usage, HasSubstr("\n  up [--foreground]                  start the Lazaret service "
                               "set (once per user)\n"));
  EXPECT_TRUE(absl::EndsWith(
      usage,
      "\nenvironment:\n"
      "  LAZARET_RUNTIME_DIR  runtime directory (default $XDG_RUNTIME_DIR/lazaret)\n"));
}

TEST(HelpTableTest, EveryCommandIsNamedOnceAndHasSynopsisSummaryAndText) {
  std::set<std::string> names;
  for (const CommandHelp& c : Commands()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    ASSERT_FALSE(c.lines.empty()) << c.name;
    for (const UsageLine& l : c.lines) {
      EXPECT_TRUE(absl::StartsWith(l.synopsis, c.name)) << l.synopsis;
      EXPECT_NE(std::string(l.summary), "");
    }
    EXPECT_THAT(c.text, HasSubstr(absl::StrCat("lazaret ", c.name))) << c.name;
    EXPECT_EQ(Find(c.name), &c);
  }
  EXPECT_EQ(Find("no-such-command"), nullptr);
}

TEST(HelpTableTest, OptionsAreTheLongOptionsTheTextNames) {
  const std::vector<std::string> run = OptionsOf(*Find("run"));
  for (const char* o : {"--config", "--branch", "--worktree", "--dry-run", "--approver"}) {
    EXPECT_THAT(run, Contains(o));
  }
  // "--" ends the options; it is not one.
  EXPECT_THAT(run, Not(Contains("--")));
  EXPECT_THAT(OptionsOf(*Find("up")), ::testing::ElementsAre("--foreground"));
  EXPECT_THAT(OptionsOf(*Find("down")), ::testing::IsEmpty());
}

TEST(ManPageTest, EveryCommandHasAPageWithItsHelpText) {
  for (const CommandHelp& c : Commands()) {
    const std::string page = RenderCommandPage(c, "9.8.7");
    EXPECT_EQ(PageFileName(c), absl::StrCat("lazaret-", c.name, ".1"));
    EXPECT_THAT(page, HasSubstr(absl::StrCat(".SH NAME\nlazaret\\-", RoffEscape(c.name), " \\- ")));
    EXPECT_THAT(page, HasSubstr("\"lazaret 9.8.7\""));
    for (absl::string_view line : absl::StrSplit(c.text, '\n')) {
      EXPECT_THAT(page, HasSubstr(RoffEscape(std::string(line)))) << c.name;
    }
  }
  const std::string main_page = RenderMainPage("9.8.7");
  for (const CommandHelp& c : Commands()) {
    EXPECT_THAT(main_page,
                HasSubstr(absl::StrCat("\\fBlazaret\\-", RoffEscape(c.name), "\\fR(1)")));
  }
}

// groff's own verdict: every page renders with all warnings on and none
// given, and a help text's words reach the output intact.
TEST(ManPageTest, PagesRenderWithoutGroffWarnings) {
  std::vector<std::pair<std::string, std::string>> pages = {{"lazaret", RenderMainPage("1")}};
  for (const CommandHelp& c : Commands()) pages.push_back({c.name, RenderCommandPage(c, "1")});
  for (const auto& [name, page] : pages) {
    test::CommandResult r = test::Run({"groff", "-man", "-Tutf8", "-ww", "-P-c"}, {}, page);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.err, "") << name;
    EXPECT_THAT(r.out, HasSubstr("lazaret")) << name;
  }
  test::CommandResult run = test::Run({"groff", "-man", "-Tascii", "-ww", "-P-c"}, {},
                                      RenderCommandPage(*Find("run"), "1"));
  EXPECT_THAT(run.out, HasSubstr("--worktree"));
  EXPECT_THAT(run.out, HasSubstr("lazaret run -- make test"));
}

TEST(CompletionTest, EveryCommandIsInEachScript) {
  absl::StatusOr<std::string> bash = RenderBashCompletion();
  absl::StatusOr<std::string> zsh = RenderZshCompletion();
  absl::StatusOr<std::string> fish = RenderFishCompletion();
  ASSERT_TRUE(bash.ok() && zsh.ok() && fish.ok());
  for (const CommandHelp& c : Commands()) {
    EXPECT_THAT(*bash, HasSubstr(absl::StrCat("        ", c.name, ") verbs='"))) << c.name;
    EXPECT_THAT(*zsh, HasSubstr(absl::StrCat("        '", c.name, ":"))) << c.name;
    EXPECT_THAT(*zsh, HasSubstr(absl::StrCat("        ", c.name, ") verbs=("))) << c.name;
    EXPECT_THAT(*fish, HasSubstr(absl::StrCat("-n __fish_use_subcommand -f -a ", c.name, " -d ")))
        << c.name;
  }
}

TEST(CompletionTest, ScriptsParseInTheirShells) {
  const std::vector<std::pair<std::string, absl::StatusOr<std::string>>> scripts = {
      {"bash", RenderBashCompletion()},
      {"zsh", RenderZshCompletion()},
      {"fish", RenderFishCompletion()}};
  for (const auto& [shell, script] : scripts) {
    ASSERT_TRUE(script.ok()) << shell;
    test::CommandResult r = test::Run({shell, "-n"}, {}, *script);
    EXPECT_EQ(r.exit_code, 0) << shell << ": " << r.err;
  }
}

// The bash script completes as a user sees it: command names, a command's
// verbs, and its options.
TEST(CompletionTest, BashCompletesCommandsVerbsAndOptions) {
  absl::StatusOr<std::string> bash = RenderBashCompletion();
  ASSERT_TRUE(bash.ok());
  auto complete = [&](const std::string& words, int cword) {
    test::CommandResult r =
        test::Run({"bash", "-c",
                   absl::StrCat(*bash, "\nCOMP_WORDS=(", words, "); COMP_CWORD=", cword,
                                "; _lazaret; printf '%s\\n' \"${COMPREPLY[@]}\"")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(complete("lazaret con", 1), "config\n");
  EXPECT_EQ(complete("lazaret net r", 2), "reload\n");
  EXPECT_EQ(complete("lazaret run --work", 2), "--worktree\n");
  EXPECT_EQ(complete("lazaret doctor --", 2), "--json\n");
}

// The fish script completes for real (fish's own `complete -C`).
TEST(CompletionTest, FishCompletesCommandsAndVerbs) {
  absl::StatusOr<std::string> fish = RenderFishCompletion();
  ASSERT_TRUE(fish.ok());
  test::CommandResult r = test::Run(
      {"fish", "--no-config", "-c",
       absl::StrCat(*fish, "\ncomplete -C 'lazaret sta'; complete -C 'lazaret state r'")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("state\t"));
  EXPECT_THAT(r.out, HasSubstr("status\t"));
  EXPECT_THAT(r.out, HasSubstr("reset"));
}

// The built CLI prints from this table: the top-level usage is
// TopLevelUsage(), and `lazaret NAME --help` ends with the command's text
// (on stdout when it has a --help, else on stderr after the usage error),
// so every command in the table is one the CLI runs.
TEST(HelpTableTest, TheCliPrintsEveryTextOfTheTable) {
  const std::map<std::string, std::string> env = {{"LAZARET_RUNTIME_DIR", "/nonexistent/lazaret"}};
  test::CommandResult top = test::Run({test::Binary("lazaret"), "--help"}, env);
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_EQ(top.out, TopLevelUsage());
  for (const CommandHelp& c : Commands()) {
    test::CommandResult r = test::Run({test::Binary("lazaret"), c.name, "--help"}, env);
    const std::string& printed = r.exit_code == 0 ? r.out : r.err;
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << c.name << ": " << r.exit_code;
    EXPECT_TRUE(absl::EndsWith(printed, c.text)) << c.name << " printed:\n" << printed;
    EXPECT_THAT(r.err, Not(HasSubstr("unknown command"))) << c.name;
  }
}

}  // namespace
}  // namespace lazaret::cli::help
