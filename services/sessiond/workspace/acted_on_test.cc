// Finding the paths host programs act on in a workspace (acted_on.h), in a
// temporary tree with real host git.
#include "services/sessiond/workspace/acted_on.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/workspace/test_fixture.h"

namespace lazaret::cli::workspace {
namespace {

class ActedOnTest : public WorkspaceScanTest {
 protected:
  ActedOnPaths Find() {
    absl::StatusOr<ActedOnPaths> r = FindActedOnPaths(ws_, "/nonexistent-home");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : ActedOnPaths{};
  }
  static const ActedOnPath* Get(const ActedOnPaths& r, const std::string& rel) {
    for (const ActedOnPath& p : r.paths) {
      if (p.rel == rel) return &p;
    }
    return nullptr;
  }
  static std::string Show(const ActedOnPaths& r) {
    std::vector<std::string> lines;
    for (const ActedOnPath& p : r.paths) {
      lines.push_back(absl::StrCat(p.rel, " [", PathTypeName(p.type), "] ", p.why));
    }
    for (const std::string& p : r.problems) lines.push_back("problem: " + p);
    return absl::StrJoin(lines, "\n");
  }
  void Write(const std::string& rel, const std::string& text) {
    Do(absl::StrCat("mkdir -p \"$(dirname ", Q(P(rel)), ")\" && printf '%s' ", Q(text), " > ",
                    Q(P(rel))));
  }
};

TEST_F(ActedOnTest, CatalogueInstancesAtEveryDepthOutermostOnly) {
  Write(".claude/settings.json", "{}");
  Write(".claude/commands/x.md", "hi");
  Write("pkg/deep/AGENTS.md", "rules");
  Write("pkg/.envrc", "export A=1");
  Write(".github/prompts/p.prompt.md", "p");
  Write(".github/workflows/ci.yml", "on: push");
  Write("sub/.github/prompts/q.md", "not read there");
  Write(".vscode/.envrc", "inside .vscode");
  Write("src/main.cc", "int main() {}");
  Do(absl::StrCat("mkdir -p ", Q(P(".env/bin")), " && touch ", Q(P(".env/bin/activate"))));
  ActedOnPaths r = Find();
  const std::string all = Show(r);
  const ActedOnPath* claude = Get(r, ".claude");
  ASSERT_NE(claude, nullptr) << all;
  EXPECT_EQ(claude->type, PathType::kDirectory);
  EXPECT_EQ(claude->why, "Claude Code");
  for (const char* rel : {"pkg/deep/AGENTS.md", "pkg/.envrc", ".github/prompts", ".vscode"}) {
    EXPECT_NE(Get(r, rel), nullptr) << rel << " missing:\n" << all;
  }
  EXPECT_EQ(Get(r, "pkg/.envrc")->type, PathType::kFile);
  for (const char* rel :
       {".claude/settings.json", ".claude/commands", ".github", ".github/workflows/ci.yml",
        "sub/.github/prompts", ".vscode/.envrc", "src/main.cc", ".env"}) {
    EXPECT_EQ(Get(r, rel), nullptr) << rel << " listed:\n" << all;
  }
  EXPECT_TRUE(r.problems.empty()) << all;
  for (size_t i = 1; i < r.paths.size(); ++i) EXPECT_LT(r.paths[i - 1].rel, r.paths[i].rel);
}

TEST_F(ActedOnTest, ASymlinkedCatalogueDirectoryIsASymlinkNeverFollowed) {
  // The target names a file of the workspace; following the link would
  // read it and list that file.
  Do(absl::StrCat(
      "mkdir -p ", Q(base_ + "/outside"), " && printf '%s' '{\"command\":\"./victim.sh\"}' > ",
      Q(base_ + "/outside/settings.json"), " && ln -s ", Q(base_ + "/outside"), " ",
      Q(P(".claude")), " && touch ", Q(P("victim.sh")), " && ln -s /etc/passwd ", Q(P(".envrc"))));
  ActedOnPaths r = Find();
  const std::string all = Show(r);
  const ActedOnPath* claude = Get(r, ".claude");
  ASSERT_NE(claude, nullptr) << all;
  EXPECT_EQ(claude->type, PathType::kSymlink);
  ASSERT_NE(Get(r, ".envrc"), nullptr) << all;
  EXPECT_EQ(Get(r, ".envrc")->type, PathType::kSymlink);
  EXPECT_EQ(Get(r, "victim.sh"), nullptr) << all;
  EXPECT_EQ(r.paths.size(), 2u) << all;
}

TEST_F(ActedOnTest, FilesNamedInSettingsTextAreHeldTransitively) {
  Write(
      ".claude/settings.json",
      R"({"hooks":{"PostToolUse":[{"hooks":[{"type":"command","command":"./scripts/lint.sh"}]}]},)"
      R"("x":"${CLAUDE_PROJECT_DIR}/scripts/other.sh","y":"missing.sh","z":"scripts"})");
  Write("scripts/lint.sh", "#!/bin/sh\n. ./scripts/helper.sh\n");
  Write("scripts/helper.sh", "echo hi\n");
  Write("scripts/other.sh", "echo other\n");
  Write("scripts/unnamed.sh", "echo unnamed\n");
  ActedOnPaths r = Find();
  const std::string all = Show(r);
  const ActedOnPath* lint = Get(r, "scripts/lint.sh");
  ASSERT_NE(lint, nullptr) << all;
  EXPECT_EQ(lint->type, PathType::kFile);
  EXPECT_EQ(lint->why, "named by .claude/settings.json");
  ASSERT_NE(Get(r, "scripts/other.sh"), nullptr) << all;
  const ActedOnPath* helper = Get(r, "scripts/helper.sh");
  ASSERT_NE(helper, nullptr) << all;
  EXPECT_EQ(helper->why, "named by scripts/lint.sh");
  EXPECT_EQ(Get(r, "scripts/unnamed.sh"), nullptr) << all;
  EXPECT_EQ(Get(r, "missing.sh"), nullptr) << all;
  EXPECT_EQ(Get(r, "scripts"), nullptr) << all;  // only regular files
}

TEST_F(ActedOnTest, TextNamedPathsThroughSymlinksOrToNonFilesAreNotHeld) {
  Do(absl::StrCat("mkdir -p ", Q(P("real")), " && touch ", Q(P("real/x.sh")), " && ln -s real ",
                  Q(P("link")), " && ln -s real/x.sh ", Q(P("direct.sh")), " && mkfifo ",
                  Q(P("fifo.sh"))));
  Write(".mcp.json", R"({"a":"link/x.sh","b":"direct.sh","c":"fifo.sh"})");
  // A FIFO in the place of a catalogue file: listed as what it is, never
  // opened for reading (that would block).
  Do(absl::StrCat("mkfifo ", Q(P(".envrc"))));
  ActedOnPaths r = Find();
  const std::string all = Show(r);
  EXPECT_EQ(Get(r, "link/x.sh"), nullptr) << all;
  EXPECT_EQ(Get(r, "direct.sh"), nullptr) << all;
  EXPECT_EQ(Get(r, "fifo.sh"), nullptr) << all;
  ASSERT_NE(Get(r, ".envrc"), nullptr) << all;
  EXPECT_EQ(Get(r, ".envrc")->type, PathType::kOther);
}

TEST_F(ActedOnTest, TheRepositorysHooksPathIsHeldPresentOrAbsent) {
  Repo("");
  Do(absl::StrCat("cd ", Q(ws_), " && git config core.hooksPath tools/hooks"));
  ActedOnPaths r = Find();
  std::string all = Show(r);
  const ActedOnPath* hooks = Get(r, "tools/hooks");
  ASSERT_NE(hooks, nullptr) << all;
  EXPECT_EQ(hooks->type, PathType::kAbsent);
  EXPECT_EQ(hooks->why, absl::StrCat("core.hookspath (file:", ws_, "/.git/config)"));

  Write("tools/hooks/pre-commit", "#!/bin/sh\n");
  r = Find();
  all = Show(r);
  hooks = Get(r, "tools/hooks");
  ASSERT_NE(hooks, nullptr) << all;
  EXPECT_EQ(hooks->type, PathType::kDirectory);
  EXPECT_EQ(Get(r, "tools/hooks/pre-commit"), nullptr) << all;

  // The usual name is in the catalogue too; git's config still names it.
  Do(absl::StrCat("cd ", Q(ws_), " && git config core.hooksPath .githooks"));
  r = Find();
  all = Show(r);
  ASSERT_NE(Get(r, ".githooks"), nullptr) << all;
  EXPECT_EQ(Get(r, ".githooks")->type, PathType::kAbsent);
  EXPECT_EQ(Get(r, "tools/hooks"), nullptr) << all;
}

TEST_F(ActedOnTest, ARepositoryOfAnotherUserStillHasItsConfigRead) {
  // Rootful `lazaret run` is root; the developer's repository is theirs.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to own the repository as another user";
  Repo("");
  Do(absl::StrCat("cd ", Q(ws_), " && git config core.hooksPath tools/hooks && chown -R 4242:4242 ",
                  Q(ws_)));
  ActedOnPaths r = Find();
  const std::string all = Show(r);
  ASSERT_NE(Get(r, "tools/hooks"), nullptr) << all;
  EXPECT_EQ(Get(r, "tools/hooks")->type, PathType::kAbsent);
}

TEST_F(ActedOnTest, AHooksPathThroughASymlinkIsTheSymlink) {
  Repo("");
  Do(absl::StrCat("mkdir -p ", Q(base_ + "/elsewhere"), " && ln -s ", Q(base_ + "/elsewhere"), " ",
                  Q(P("tools")), " && cd ", Q(ws_), " && git config core.hooksPath tools/hooks"));
  ActedOnPaths r = Find();
  const std::string all = Show(r);
  ASSERT_NE(Get(r, "tools"), nullptr) << all;
  EXPECT_EQ(Get(r, "tools")->type, PathType::kSymlink);
  EXPECT_EQ(Get(r, "tools/hooks"), nullptr) << all;
}

TEST_F(ActedOnTest, ARelativeIncludeAndWhatItNames) {
  Repo("");
  Write("conf/team.gitconfig",
        "[alias]\n\tlint = !./scripts/git-lint.sh\n[diff \"bin\"]\n"
        "\ttextconv = tools/tconv\n");
  Do(absl::StrCat("cd ", Q(ws_), " && git config include.path ../conf/team.gitconfig"));
  ActedOnPaths r = Find();
  const std::string all = Show(r);
  const ActedOnPath* inc = Get(r, "conf/team.gitconfig");
  ASSERT_NE(inc, nullptr) << all;
  EXPECT_EQ(inc->type, PathType::kFile);
  EXPECT_EQ(inc->why, absl::StrCat("include.path (file:", ws_, "/.git/config)"));
  const ActedOnPath* lint = Get(r, "scripts/git-lint.sh");
  ASSERT_NE(lint, nullptr) << all;
  EXPECT_EQ(lint->type, PathType::kAbsent);
  EXPECT_EQ(lint->why, absl::StrCat("alias.lint (file:", ws_, "/.git/../conf/team.gitconfig)"));
  ASSERT_NE(Get(r, "tools/tconv"), nullptr) << all;
}

TEST_F(ActedOnTest, AGitConfigPathInsideACatalogueDirectoryIsCoveredByIt) {
  Repo("");
  Write(".claude/hooks/x.sh", "echo\n");
  Do(absl::StrCat("cd ", Q(ws_), " && git config core.hooksPath .claude/hooks"));
  ActedOnPaths r = Find();
  const std::string all = Show(r);
  ASSERT_NE(Get(r, ".claude"), nullptr) << all;
  EXPECT_EQ(Get(r, ".claude/hooks"), nullptr) << all;
}

TEST_F(ActedOnTest, GitDirectoriesAreNotWalked) {
  Repo("");
  Write(".git/.envrc", "not a working-tree file");
  Write("nested/.git/.claude/settings.json", "{}");
  // A config naming a path in the Git Shadow's .git is covered there.
  Do(absl::StrCat("cd ", Q(ws_), " && git config core.hooksPath .git/myhooks"));
  ActedOnPaths r = Find();
  EXPECT_EQ(Get(r, ".git/myhooks"), nullptr) << Show(r);
  const std::string all = Show(r);
  EXPECT_EQ(Get(r, ".git/.envrc"), nullptr) << all;
  EXPECT_EQ(Get(r, "nested/.git/.claude"), nullptr) << all;
}

TEST_F(ActedOnTest, TheWalksLimitsAreReported) {
  Write("a/b/c/d/.envrc", "x");
  absl::StatusOr<ActedOnPaths> r = FindActedOnPaths(ws_, "", ScanLimits{.max_depth = 2});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->problems.empty());
  EXPECT_EQ(Get(*r, "a/b/c/d/.envrc"), nullptr);
  r = FindActedOnPaths(ws_, "", ScanLimits{.max_entries = 1});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->problems.empty());
}

TEST_F(ActedOnTest, AMissingWorkspaceIsAnError) {
  EXPECT_FALSE(FindActedOnPaths(P("nope"), "").ok());
}

}  // namespace
}  // namespace lazaret::cli::workspace
