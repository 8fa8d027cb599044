#include "services/brokerd/command/matcher.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/brokerd/command/checked_command.h"
#include "services/brokerd/command/operand_paths.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::brokerd::command {
namespace {

using ::testing::HasSubstr;

// A PATH of two scratch directories, early/ (empty at session start) and
// bin/ (gh, date and env), the entries 'gh pr view' (options --json and
// --comments), exact 'gh auth status' and 'date', and ws/, the working
// directory of the requests, beside secret, a host file outside it.
class JudgeTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    ScratchTest::SetUp();
    ASSERT_EQ(mkdir(P("early").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("bin").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("ws").c_str(), 0755), 0);
    Write("secret", "host secret\n");
    ws_fd_ = open(P("ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(ws_fd_, 0);
    MakeProgram("bin/gh");
    MakeProgram("bin/date");
    MakeProgram("bin/env");
    search_path_ = P("early") + ":" + P("bin");
    entries_.push_back(Entry({"gh", "pr", "view"}, false, "gh pr view"));
    entries_.back().options = {"--json", "--comments"};
    entries_.push_back(Entry({"gh", "auth", "status"}, true, "gh auth status"));
    entries_.push_back(Entry({"date"}, false, "date"));
  }
  void TearDown() override {
    if (ws_fd_ >= 0) close(ws_fd_);
    ScratchTest::TearDown();
  }
  void MakeProgram(const std::string& rel) {
    Write(rel, "#!/bin/sh\n");
    ASSERT_EQ(chmod(P(rel).c_str(), 0755), 0);
  }
  AutoApproveEntry Entry(std::vector<std::string> argv, bool exact, std::string text) {
    AutoApproveEntry e;
    e.binary = *ResolveCommandName(argv[0], search_path_);
    e.argv = std::move(argv);
    e.exact = exact;
    e.text = std::move(text);
    return e;
  }
  // What the broker does with a request's command text.
  Judgement JudgeText(const std::string& text) {
    const std::vector<std::string> argv = SplitRequestCommand(text).value_or(std::vector<std::string>{});
    return JudgeArgv(text, argv);
  }
  Judgement JudgeArgv(const std::string& text, const std::vector<std::string>& argv) {
    ResolvedBinary binary;
    if (!argv.empty()) {
      binary = ResolveCommandName(argv[0], search_path_).value_or(ResolvedBinary{});
    }
    return Judge(text, argv, binary, entries_, OperandsBeneath(ws_fd_));
  }

  int ws_fd_ = -1;
  std::string search_path_;
  std::vector<AutoApproveEntry> entries_;
};

struct BypassCase {
  const char* text;
  const char* reason;  // the judgement's reason_not_auto, exactly (below: a part of it)
};

TEST_F(JudgeTest, PrefixWithPlainOperandsAndListedOptionsIsAuto) {
  for (const char* text :
       {"gh pr view", "gh pr view 1", "gh pr view 1 --comments", "gh pr view --json title,body",
        "gh pr view --json=title,body 12", "gh pr view feature-branch --comments --json url",
        "gh auth status", "date", "date +%s", "date +%Y-%m-%d", "gh pr view owner:branch"}) {
    const Judgement j = JudgeText(text);
    EXPECT_TRUE(j.auto_approved) << text << ": " << j.reason_not_auto;
  }
  EXPECT_EQ(JudgeText("gh pr view 1 --comments").entry_text, "gh pr view");
  EXPECT_EQ(JudgeText("gh auth status").entry_text, "gh auth status");
}

// Issue 20 item 3: an entry plus an appended option or a path operand read
// host files. Each reason names the first word that failed and why.
TEST_F(JudgeTest, OptionsAndPathsAfterAPrefixGoToAHuman) {
  const BypassCase cases[] = {
      {"date -f secret", "argv[1] '-f' is an option, and the matching entry lists none"},
      {"date --file=secret", "argv[1] '--file=secret' is an option, and the matching entry"},
      {"date --f secret", "argv[1] '--f' is an option"},
      {"date -- -f", "argv[1] '--' is an option"},
      {"date /etc/passwd", "argv[1] '/etc/passwd' is an absolute path"},
      {"date ../secret", "argv[1] '../secret' has a '..' component"},
      {"date a/../../secret", "argv[1] 'a/../../secret' has a '..' component"},
      {"date x=y", "argv[1] 'x=y' contains '='"},
      {"date @secret", "argv[1] '@secret' contains '@'"},
      {"date file:/etc/passwd", "argv[1] 'file:/etc/passwd' contains ':/'"},
      {"date file:///etc/passwd", "argv[1] 'file:///etc/passwd' contains ':/'"},
      {"gh pr view 1 --web", "argv[4] '--web' is an option the matching entry does not list"},
      {"gh pr view --js title", "argv[3] '--js' is an option the matching entry does not list"},
      {"gh pr view --json=@body", "the value of the listed option '--json' must be a plain"},
      {"gh pr view --json /etc/passwd", "argv[4] '/etc/passwd' is an absolute path"},
  };
  for (const BypassCase& c : cases) {
    const Judgement j = JudgeText(c.text);
    EXPECT_FALSE(j.auto_approved) << c.text;
    EXPECT_THAT(j.reason_not_auto, HasSubstr(c.reason)) << c.text;
  }
  // Argv requests too (no text to split); an empty word is no operand.
  EXPECT_THAT(JudgeArgv("", {"date", "-rF", "secret"}).reason_not_auto,
              HasSubstr("argv[1] '-rF' is an option"));
  EXPECT_THAT(JudgeArgv("", {"date", ""}).reason_not_auto, HasSubstr("empty word"));
  EXPECT_THAT(JudgeText("date -f secret").reason_not_auto,
              HasSubstr("the entry 'date' admits only plain operands"));
}

TEST_F(JudgeTest, AnOperandThatIsASymlinkOutOfTheWorkspaceGoesToAHuman) {
  ASSERT_EQ(symlink(P("secret").c_str(), P("ws/link").c_str()), 0);
  ASSERT_EQ(symlink("../secret", P("ws/rel").c_str()), 0);
  ASSERT_EQ(symlink("secret-in-ws", P("ws/inside").c_str()), 0);
  for (const char* text : {"date link", "gh pr view link", "gh pr view --json link",
                           "gh pr view --json=rel", "date rel"}) {
    const Judgement j = JudgeText(text);
    EXPECT_FALSE(j.auto_approved) << text;
    EXPECT_THAT(j.reason_not_auto, HasSubstr("leads out of the working directory")) << text;
  }
  EXPECT_TRUE(JudgeText("date inside").auto_approved);
  // A listed option word is checked too: it may be the value of the option
  // before it.
  ASSERT_EQ(symlink(P("secret").c_str(), P("ws/--comments").c_str()), 0);
  EXPECT_THAT(JudgeText("gh pr view --json --comments").reason_not_auto,
              HasSubstr("'--comments' names a path that leads out"));
}

TEST_F(JudgeTest, WithoutAWorkingDirectoryNoOperandIsAuto) {
  const ResolvedBinary date = *ResolveCommandName("date", search_path_);
  EXPECT_TRUE(Judge("date", {"date"}, date, entries_, {}).auto_approved);
  const Judgement j = Judge("date 12", {"date", "12"}, date, entries_, {});
  EXPECT_FALSE(j.auto_approved);
  EXPECT_THAT(j.reason_not_auto, HasSubstr("no working directory"));
}

TEST_F(JudgeTest, TheLongestMatchingEntryGivesTheReason) {
  EXPECT_THAT(JudgeText("gh pr view -R x").reason_not_auto,
              HasSubstr("the entry 'gh pr view' admits only plain operands"));
  entries_.push_back(Entry({"gh"}, false, "gh"));
  EXPECT_THAT(JudgeText("gh pr view -R x").reason_not_auto,
              HasSubstr("the entry 'gh pr view' admits only plain operands"));
  // Of two entries for the same words, the one that admitted more of them.
  entries_.push_back(Entry({"date"}, false, "date with options"));
  entries_.back().options = {"-u", "--date"};
  EXPECT_THAT(JudgeText("date -u -f x").reason_not_auto,
              HasSubstr("the entry 'date with options' admits only plain operands and the "
                        "options it lists: argv[2] '-f' is an option the matching entry does not "
                        "list (it lists -u, --date;"));
  EXPECT_TRUE(JudgeText("date -u --date 2020-01-01").auto_approved);
}

TEST_F(JudgeTest, BypassCorpusIsNeverAuto) {
  const BypassCase cases[] = {
      {"env gh pr view", "no auto_approve entry is a prefix of this command"},
      {"timeout 5 gh pr view", "no auto_approve entry is a prefix of this command"},
      {"xargs gh pr view", "no auto_approve entry is a prefix of this command"},
      {"nice gh pr view", "no auto_approve entry is a prefix of this command"},
      {"gh pr", "no auto_approve entry is a prefix of this command"},
      {"gh pr viewx", "no auto_approve entry is a prefix of this command"},
      {"./gh pr view", "argv[0] must be a command name, not a path ('./gh')"},
      {"/usr/bin/gh pr view", "argv[0] must be a command name, not a path ('/usr/bin/gh')"},
      {"VAR=x gh pr view", "argv[0] is an assignment (VAR=value)"},
      {"rm -rf ~", "contains '~'"},
      {"gh pr view $(id)", "contains '$'"},
      {"gh pr view `id`", "contains '`'"},
      {"gh pr view 1; id", "contains ';'"},
      {"gh pr view 1 && id", "contains '&'"},
      {"gh pr view 1 | sh", "contains '|'"},
      {"gh pr view > /etc/x", "contains '>'"},
      {"gh pr view *", "contains '*'"},
      {"gh pr view # comment", "contains '#'"},
      {"gh pr view 'x'", "contains '''"},
      {"gh pr \"view\"", "contains '\"'"},
      {"gh pr vi\\ew", "contains a backslash"},
      {"gh auth status --show-token",
       "the entry 'gh auth status' is exact and this command adds "
       "arguments"},
      {"gh pr view 12\u202E", "contains U+202E RIGHT-TO-LEFT OVERRIDE at byte 13"},
      {"gh pr view\u200B", "contains U+200B ZERO WIDTH SPACE at byte 10"},
      {"\uFEFFgh pr view", "contains U+FEFF ZERO WIDTH NO-BREAK SPACE at byte 0"},
      {"gh\u00A0pr view", "contains U+00A0 NO-BREAK SPACE at byte 2"},
      {"\uFF47\uFF48 pr view", "contains U+FF47 (a non-ASCII character) at byte 0"},
      {"gh pr vi\u0435w", "contains U+0435 (a non-ASCII character) at byte 8"},
      {"gh\tpr view", "contains a tab at byte 2"},
      {"gh pr view\nid", "contains a newline at byte 10"},
      {"gh pr view\rid", "contains a carriage return at byte 10"},
      {"gh pr view\x1b[8m", "contains control character 0x1B at byte 10"},
  };
  for (const BypassCase& c : cases) {
    const Judgement j = JudgeText(c.text);
    EXPECT_FALSE(j.auto_approved) << c.text;
    EXPECT_EQ(j.reason_not_auto, c.reason) << c.text;
  }
}

TEST_F(JudgeTest, ArgvRequestsAreJudgedElementByElement) {
  EXPECT_TRUE(JudgeArgv("", {"gh", "pr", "view", "1"}).auto_approved);
  EXPECT_EQ(JudgeArgv("", {"gh", "pr", "view", "a;b"}).reason_not_auto, "argv[3] contains ';'");
  EXPECT_EQ(JudgeArgv("", {"gh", "pr", "view", "x\ny"}).reason_not_auto,
            "argv[3] contains a newline at byte 1");
  EXPECT_EQ(JudgeArgv("", {"gh", "pr", "view", std::string("a\0", 2)}).reason_not_auto,
            "argv[3] contains a NUL byte at byte 1");
  EXPECT_EQ(JudgeArgv("", {}).reason_not_auto, "the command is empty");
}

TEST_F(JudgeTest, TextMustSplitIntoTheJudgedArgv) {
  EXPECT_EQ(JudgeArgv("gh pr view 1", {"gh", "pr", "view", "2"}).reason_not_auto,
            "the command does not split into the argv judged");
}

TEST_F(JudgeTest, EmptyEntryNeverMatches) {
  entries_.clear();
  AutoApproveEntry empty;
  empty.binary = *ResolveCommandName("gh", search_path_);
  entries_.push_back(empty);
  EXPECT_FALSE(JudgeText("gh pr view").auto_approved);
}

TEST_F(JudgeTest, BinaryReplacedAfterSessionStartIsNotAuto) {
  // Another inode at the same path (written beside it, renamed over it).
  Write("bin/gh.new", "#!/bin/sh\necho other\n");
  ASSERT_EQ(chmod(P("bin/gh.new").c_str(), 0755), 0);
  ASSERT_EQ(rename(P("bin/gh.new").c_str(), P("bin/gh").c_str()), 0);
  const Judgement j = JudgeText("gh pr view 1");
  EXPECT_FALSE(j.auto_approved);
  EXPECT_EQ(j.reason_not_auto,
            "'gh' resolves to " + P("bin/gh") + ", which is not the file it was at session start");
}

TEST_F(JudgeTest, BinaryShadowedEarlierOnThePathIsNotAuto) {
  MakeProgram("early/gh");
  const Judgement j = JudgeText("gh pr view 1");
  EXPECT_FALSE(j.auto_approved);
  EXPECT_EQ(j.reason_not_auto, "'gh' now resolves to " + P("early/gh") + ", not " + P("bin/gh") +
                                   " as at session start");
}

}  // namespace
}  // namespace lazaret::brokerd::command
