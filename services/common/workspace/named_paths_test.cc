#include "services/common/workspace/named_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazaret::workspace {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr char kWs[] = "/home/u/r";
constexpr char kHome[] = "/home/u";
constexpr char kRepoConfig[] = "file:/home/u/r/.git/config";

std::vector<NamedPath> Named(const std::vector<GitConfigEntry>& entries,
                             const std::string& top = kWs) {
  return PathsNamedByGitConfig(entries, top, kWs, kHome);
}

// The relative paths one key with one value names.
std::vector<std::string> Rels(const std::string& key, const std::string& value,
                              const std::string& origin = kRepoConfig) {
  std::vector<std::string> out;
  for (const NamedPath& n : Named({{key, value, origin}})) out.push_back(n.rel);
  return out;
}

TEST(NamedPathsTest, HooksPathRelativeToTheWorktreeTopIsADirectory) {
  std::vector<NamedPath> n = Named({{"core.hookspath", ".githooks", kRepoConfig}});
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].rel, ".githooks");
  EXPECT_EQ(n[0].key, "core.hookspath");
  EXPECT_TRUE(n[0].directory);
  EXPECT_THAT(Rels("core.hooksPath", "tools/hooks/"), ElementsAre("tools/hooks"));
  EXPECT_THAT(Rels("core.hookspath", "/home/u/r/h"), ElementsAre("h"));
  EXPECT_THAT(Rels("core.hookspath", "~/r/h2"), ElementsAre("h2"));
  EXPECT_THAT(Rels("core.hookspath", "./a/../b"), ElementsAre("b"));
  // Outside the workspace: not ours.
  EXPECT_THAT(Rels("core.hookspath", "/etc/hooks"), IsEmpty());
  EXPECT_THAT(Rels("core.hookspath", "../other/hooks"), IsEmpty());
  EXPECT_THAT(Rels("core.hookspath", "~/.hooks"), IsEmpty());
  EXPECT_THAT(Rels("core.hookspath", "/home/u/rx/hooks"), IsEmpty());
}

TEST(NamedPathsTest, HooksPathAtTheRootNamesEveryHook) {
  std::vector<std::string> rels = Rels("core.hookspath", ".");
  EXPECT_THAT(rels, ::testing::Contains("pre-commit"));
  EXPECT_THAT(rels, ::testing::Contains("post-checkout"));
  EXPECT_THAT(rels, ::testing::Not(::testing::Contains("")));
}

TEST(NamedPathsTest, WorkspaceBelowTheWorktreeTop) {
  // The workspace is a subdirectory of the repository: relative values are
  // resolved against the top, then kept only inside the workspace.
  std::vector<NamedPath> n = PathsNamedByGitConfig(
      {{"core.hookspath", "r/hooks", kRepoConfig}, {"core.hookspath", "hooks", kRepoConfig}},
      "/home/u", kWs, kHome);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].rel, "hooks");
}

TEST(NamedPathsTest, IncludePathsAreRelativeToTheIncludingFile) {
  EXPECT_THAT(Rels("include.path", "../conf/extra.gitconfig", "file:/home/u/r/.git/config"),
              ElementsAre("conf/extra.gitconfig"));
  EXPECT_THAT(Rels("includeif.gitdir:/home/u/r/.path", "../team.inc", kRepoConfig),
              ElementsAre("team.inc"));
  EXPECT_THAT(Rels("include.path", "inc/x", "file:/home/u/r/sub/cfg"), ElementsAre("sub/inc/x"));
  // Relative origins (git prints them relative to where it ran) are taken
  // from the worktree top.
  EXPECT_THAT(Rels("include.path", "../shared.inc", "file:.git/config"), ElementsAre("shared.inc"));
  EXPECT_THAT(Rels("include.path", "~/r/x.inc", "file:/etc/gitconfig"), ElementsAre("x.inc"));
  EXPECT_THAT(Rels("include.path", "x.inc", "command line:"), IsEmpty());
}

TEST(NamedPathsTest, PathValuedKeys) {
  EXPECT_THAT(Rels("core.excludesfile", "ignore.txt"), ElementsAre("ignore.txt"));
  EXPECT_THAT(Rels("core.attributesfile", "meta/attrs"), ElementsAre("meta/attrs"));
  EXPECT_THAT(Rels("commit.template", "msg"), ElementsAre("msg"));
  std::vector<NamedPath> n = Named({{"init.templatedir", "tmpl", kRepoConfig}});
  ASSERT_EQ(n.size(), 1u);
  EXPECT_TRUE(n[0].directory);
  // A key never seen before with a pathname-like variable counts too.
  EXPECT_THAT(Rels("newtool.somefile", "data"), ElementsAre("data"));
}

TEST(NamedPathsTest, CommandValuedKeysThroughTheGenericRule) {
  struct Case {
    const char* key;
    const char* value;
    const char* want;
  };
  const Case cases[] = {
      {"core.fsmonitor", ".git-fsmon/watch.sh", ".git-fsmon/watch.sh"},
      {"core.sshcommand", "ssh -i ./keys/id -F tools/ssh.cfg", "keys/id"},
      {"core.pager", "./bin/pager --flag", "bin/pager"},
      {"core.editor", "tools/ed.sh", "tools/ed.sh"},
      {"sequence.editor", "\"./rebase editor.sh\"", "rebase"},
      {"diff.external", "scripts/difftool", "scripts/difftool"},
      {"diff.bin.textconv", "./tconv", "tconv"},
      {"diff.bin.command", "sh ./d.sh", "d.sh"},
      {"filter.lfsx.clean", "./filters/clean %f", "filters/clean"},
      {"filter.lfsx.smudge", "filters/smudge", "filters/smudge"},
      {"filter.lfsx.process", "python3 tools/proc.py --x", "tools/proc.py"},
      {"merge.ours.driver", "./merge.sh %O %A %B", "merge.sh"},
      {"gpg.program", "./gpg-wrap", "gpg-wrap"},
      {"gpg.ssh.program", "bin/ssh-keygen", "bin/ssh-keygen"},
      {"credential.helper", "!./cred.sh", "cred.sh"},
      {"credential.https://x.example.helper", "!f() { .cred/h \"$@\"; }; f", ".cred/h"},
      {"alias.st", "!sh -c 'exec ./hack/st'", "hack/st"},
      {"pager.log", "tools/pg", "tools/pg"},
      {"interactive.difffilter", "./df --color", "df"},
      {"core.askpass", "~/r/askpass", "askpass"},
      {"uploadpack.packobjectshook", "./poh", "poh"},
      {"diff.py.textconv", "python3 conv.py --x", "conv.py"},
      {"filter.x.smudge", "node smudge.cjs", "smudge.cjs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.key) + " = " + c.value);
    EXPECT_THAT(Rels(c.key, c.value), ::testing::Contains(c.want));
  }
  EXPECT_THAT(Rels("core.sshcommand", "ssh -i ./keys/id -F tools/ssh.cfg"),
              UnorderedElementsAre("keys/id", "tools/ssh.cfg"));
}

TEST(NamedPathsTest, DataThatIsNeverALocalPath) {
  EXPECT_THAT(Rels("remote.origin.url", "git@github.com:u/r.git"), IsEmpty());
  EXPECT_THAT(Rels("remote.origin.url", "https://example.com/u/r.git"), IsEmpty());
  EXPECT_THAT(Rels("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"), IsEmpty());
  EXPECT_THAT(Rels("branch.main.merge", "refs/heads/main"), IsEmpty());
  EXPECT_THAT(Rels("core.editor", "vim"), IsEmpty());
  EXPECT_THAT(Rels("user.name", "A. U. Thor"), IsEmpty());
  EXPECT_THAT(Rels("user.email", "a.u.thor@example.com"), IsEmpty());
  EXPECT_THAT(Rels("core.pager", "less -R"), IsEmpty());
  EXPECT_THAT(Rels("branch.fix.description", "Fix the foo/bar thing in ./x"), IsEmpty());
  EXPECT_THAT(Rels("alias.lg", "log --format=%h/%s"), IsEmpty());
  // A non-shell alias can still set a program through -c.
  EXPECT_THAT(Rels("alias.l", "-c core.pager=./pg log"), ElementsAre("pg"));
  // A program without a '/' is found on PATH (git runs a credential helper
  // "x.sh" as "git credential-x.sh"), never in the tree.
  EXPECT_THAT(Rels("credential.helper", "gcloud.sh"), IsEmpty());
  EXPECT_THAT(Rels("core.editor", "edit.sh --wait"), IsEmpty());
  EXPECT_THAT(Rels("core.bare", "false"), IsEmpty());
  EXPECT_THAT(Rels("alias.x", "!echo $HOME/bin"), IsEmpty());
  // A local remote inside the tree does count: fetching reads it.
  EXPECT_THAT(Rels("remote.local.url", "./mirror.git"), ElementsAre("mirror.git"));
}

TEST(NamedPathsTest, SortedAndOneEntryPerPath) {
  std::vector<NamedPath> n = Named({{"core.hookspath", "h", kRepoConfig},
                                    {"core.editor", "./h/x", kRepoConfig},
                                    {"core.pager", "./a", kRepoConfig},
                                    {"alias.q", "!./h", kRepoConfig}});
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].rel, "a");
  EXPECT_EQ(n[1].rel, "h");
  EXPECT_EQ(n[1].key, "core.hookspath");
  EXPECT_TRUE(n[1].directory);
  EXPECT_EQ(n[2].rel, "h/x");
}

TEST(NamedPathsTest, PlainFolderResolvesAgainstTheWorkspace) {
  std::vector<NamedPath> n =
      PathsNamedByGitConfig({{"core.pager", "./p", kRepoConfig}}, "", kWs, kHome);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].rel, "p");
}

TEST(NamedPathsTest, EmptyHomeNamesNothingThroughTilde) {
  EXPECT_THAT(PathsNamedByGitConfig({{"core.hookspath", "~/r/h", kRepoConfig}}, kWs, kWs, ""),
              IsEmpty());
}

TEST(NamedPathsTest, TextNamesScriptsRelativeToTheRoot) {
  EXPECT_THAT(PathsNamedInText(R"({"hooks":{"SessionStart":[{"hooks":[{"type":"command",)"
                               R"("command":"$CLAUDE_PROJECT_DIR/.claude/hooks/start.sh"}]}]}})"),
              ElementsAre(".claude/hooks/start.sh"));
  EXPECT_THAT(PathsNamedInText(R"("command": "\"${CLAUDE_PROJECT_DIR}/scripts/lint.sh\"")"),
              ElementsAre("scripts/lint.sh"));
  // Claude Code's documentation quotes the variable alone.
  EXPECT_THAT(PathsNamedInText(R"("command": "\"$CLAUDE_PROJECT_DIR\"/scripts/format.sh")"),
              ElementsAre("scripts/format.sh"));
  EXPECT_THAT(PathsNamedInText(R"(sh "$PWD"/a.sh '${workspaceFolder}'/b.sh $(pwd)/c.sh)"),
              ElementsAre("a.sh", "b.sh", "c.sh"));
  EXPECT_THAT(PathsNamedInText(R"($PWDX/a.sh $CLAUDE_PROJECT_DIRS/b.sh)"), IsEmpty());
  EXPECT_THAT(PathsNamedInText(R"({"command":"${workspaceFolder}/tools/build.sh","args":[]})"),
              ElementsAre("tools/build.sh"));
  EXPECT_THAT(PathsNamedInText("run = \"./scripts/lint.sh --fix\"\n"),
              ElementsAre("scripts/lint.sh"));
  EXPECT_THAT(PathsNamedInText("yarnPath: .yarn/releases/yarn-4.1.0.cjs\n"),
              ElementsAre(".yarn/releases/yarn-4.1.0.cjs"));
  EXPECT_THAT(PathsNamedInText("source_env_if_exists .envrc.local\nsource $PWD/env/dev.sh\n"),
              ElementsAre(".envrc.local", "env/dev.sh"));
  EXPECT_THAT(PathsNamedInText("[mcp_servers.x]\ncommand = \"node\"\nargs = [\"./mcp/srv.js\"]"),
              ElementsAre("mcp_servers.x", "mcp/srv.js"));
}

TEST(NamedPathsTest, TextKeepsOnlyCleanRelativePaths) {
  // A URL's path part starts with "//" once the scheme is cut off at ':'.
  EXPECT_THAT(PathsNamedInText("/etc/passwd ~/x ../up a/../../b https://x.example/a.sh"),
              IsEmpty());
  EXPECT_THAT(PathsNamedInText("$HOME/x.sh ${OTHER}/y.sh *.sh a?.sh"), IsEmpty());
  EXPECT_THAT(PathsNamedInText("bash command type hooks"), IsEmpty());
  EXPECT_THAT(PathsNamedInText("a//b/./c.sh ./././d.sh x.sh x.sh"),
              ElementsAre("a/b/c.sh", "d.sh", "x.sh"));
  EXPECT_THAT(PathsNamedInText("a/../b.sh"), IsEmpty());
  EXPECT_THAT(PathsNamedInText(""), IsEmpty());
}

TEST(NamedPathsTest, TextIsBounded) {
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "f" + std::to_string(i) + ".sh ";
  std::vector<std::string> t = PathsNamedInText(many);
  EXPECT_EQ(t.size(), kMaxNamedTextTokens);
  EXPECT_EQ(t.front(), "f0.sh");
  // Past the byte cap nothing is read.
  std::string big(kMaxNamedTextBytes, ' ');
  big += "late.sh";
  EXPECT_THAT(PathsNamedInText(big), IsEmpty());
}

TEST(NamedPathsTest, LexicallyNormal) {
  bool climbed = false;
  EXPECT_EQ(LexicallyNormal("/a/./b//c/../d", &climbed), "/a/b/d");
  EXPECT_FALSE(climbed);
  EXPECT_EQ(LexicallyNormal("/../a"), "/a");
  EXPECT_EQ(LexicallyNormal("../a", &climbed), "a");
  EXPECT_TRUE(climbed);
  EXPECT_EQ(LexicallyNormal("a/.."), "");
}

}  // namespace
}  // namespace lazaret::workspace
