// Files host programs act on (services/common/workspace/catalogue.h) and
// symlinks leading out of the tree, as the end scan lists them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/workspace/scan.h"
#include "services/sessiond/workspace/snapshot.h"
#include "services/sessiond/workspace/test_fixture.h"
#include "services/sessiond/workspace/walk.h"
#include "services/common/fs/fd.h"

namespace lazaret::cli::workspace {
namespace {

std::vector<std::string> Listed(const ScanReport& r) {
  std::vector<std::string> out;
  for (const ActedOnFile& f : r.acted_on_files) out.push_back(f.tools + ": " + f.path);
  return out;
}

std::vector<std::string> Links(const ScanReport& r) {
  std::vector<std::string> out;
  for (const OutwardSymlink& l : r.outward_symlinks) out.push_back(l.path + " -> " + l.target);
  return out;
}

TEST_F(WorkspaceScanTest, EditorFilesTheSessionWroteAreListed) {
  Do(absl::StrCat("mkdir -p ", Q(P(".idea")), " && touch ", Q(P(".editorconfig"))));
  GitDirSnapshot snap = Snapshot();
  Do(absl::StrCat("mkdir -p ", Q(P(".vscode")), " ", Q(P("sub/.devcontainer")), " && echo '{}' > ",
                  Q(P(".vscode/tasks.json")), " && echo 'export X=1' > ", Q(P(".envrc")),
                  " && touch ", Q(P(".env.local")), " ",
                  Q(P("sub/.devcontainer/devcontainer.json")), " ", Q(P("plain.txt"))));
  ScanReport r = End(snap);
  std::vector<std::string> want = {"VS Code: " + P(".vscode/"), "direnv: " + P(".envrc"),
                                   "dotenv loaders: " + P(".env.local"),
                                   "Dev Containers: " + P("sub/.devcontainer/")};
  const std::vector<std::string> listed = Listed(r);
  for (const auto& w : want) {
    EXPECT_NE(std::find(listed.begin(), listed.end(), w), listed.end())
        << w << " missing from:\n"
        << absl::StrJoin(listed, "\n");
  }
  EXPECT_EQ(listed.size(), want.size()) << absl::StrJoin(listed, "\n");
}

TEST_F(WorkspaceScanTest, CodingAgentAndBuildFilesAreListedOutermostWithTheirTool) {
  Do(absl::StrCat("mkdir -p ", Q(P(".claude")), " && echo '{}' > ", Q(P(".claude/settings.json"))));
  GitDirSnapshot snap = Snapshot();
  Do(absl::StrCat("mkdir -p ", Q(P("sub/.claude/commands")), " ", Q(P(".github/prompts")), " ",
                  Q(P(".husky")), " ", Q(P("venv/.env/bin")), " ", Q(P("deep")), " && echo x > ",
                  Q(P("sub/.claude/commands/c.md")), " && echo x > ",
                  Q(P(".github/prompts/p.prompt.md")), " && echo x > ", Q(P(".husky/pre-commit")),
                  " && echo x > ", Q(P("pkg.AGENTS.md")), " && echo x > ", Q(P("deep/AGENTS.md")),
                  " && touch ", Q(P("venv/.env/bin/activate"))));
  ScanReport r = End(snap);
  const std::vector<std::string> listed = Listed(r);
  const std::vector<std::string> want = {
      "Claude Code: " + P("sub/.claude/"), "GitHub Copilot: " + P(".github/prompts/"),
      "husky: " + P(".husky/"), "OpenAI Codex and others (AGENTS.md): " + P("deep/AGENTS.md")};
  for (const auto& w : want) {
    EXPECT_NE(std::find(listed.begin(), listed.end(), w), listed.end())
        << w << " missing from:\n"
        << absl::StrJoin(listed, "\n");
  }
  // The untouched .claude/, a virtualenv named .env, and names that only
  // look alike are not listed.
  EXPECT_EQ(listed.size(), want.size()) << absl::StrJoin(listed, "\n");
  const std::string lines = absl::StrJoin(ReportLines(r), "\n");
  EXPECT_NE(lines.find("  Claude Code: " + P("sub/.claude/")), std::string::npos) << lines;
}

TEST_F(WorkspaceScanTest, ListedNamesShowEveryByte) {
  GitDirSnapshot snap = Snapshot();
  Do(absl::StrCat("mkdir -p \"", ws_, "/$(printf 'a\\033[2Jb')\" && touch \"", ws_,
                  "/$(printf 'a\\033[2Jb')/.envrc\""));
  ScanReport r = End(snap);
  const std::string lines = absl::StrJoin(ReportLines(r), "\n");
  EXPECT_EQ(lines.find('\033'), std::string::npos) << lines;
  EXPECT_NE(lines.find("a\\x1b[2Jb/.envrc"), std::string::npos) << lines;
}

TEST_F(WorkspaceScanTest, SymlinksTheSessionLeftPointingOutsideAreReported) {
  Do(absl::StrCat("mkdir -p ", Q(P("a/b")), " && ln -s /etc ", Q(P("old-abs"))));
  GitDirSnapshot snap = Snapshot();
  Do(absl::StrCat("cd ", Q(ws_), " && ln -s /etc/passwd abs && ln -s ../../.. a/b/up",
                  " && ln -s ../b a/b/side && ln -s ../../x a/b/in && ln -s a/b/in chain",
                  " && ln -s old-abs/hosts via-old && ln -s a/b/up/etc via-up",
                  " && ln -s loop1 loop2 && ln -s loop2 loop1 && ln -s missing/../.. dangling",
                  " && ln -s ./. dot"));
  ScanReport r = End(snap);
  std::vector<std::string> links = Links(r);
  std::sort(links.begin(), links.end());
  const std::vector<std::string> want = {P("a/b/up") + " -> ../../..", P("abs") + " -> /etc/passwd",
                                         P("dangling") + " -> missing/../..",
                                         P("via-old") + " -> old-abs/hosts",
                                         P("via-up") + " -> a/b/up/etc"};
  EXPECT_EQ(links, want) << absl::StrJoin(links, "\n");
  const std::string lines = absl::StrJoin(ReportLines(r), "\n");
  EXPECT_NE(lines.find("the session left 5 symlinks that point outside the folder"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find("  " + P("abs") + " -> /etc/passwd"), std::string::npos) << lines;
  // Nothing was followed or removed: the links are as the session left them.
  EXPECT_TRUE(Exists(P("abs")));
}

TEST_F(WorkspaceScanTest, SymlinkLeavesTreeResolvesThroughTheTreesOwnLinks) {
  Do(absl::StrCat("mkdir -p ", Q(P("d/e")), " && cd ", Q(ws_),
                  " && ln -s d/e de && ln -s .. d/up"));
  absl::StatusOr<fs::DirFd> root = fs::DirFd::Open(ws_);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_FALSE(SymlinkLeavesTree(*root, "x", "d/e/f"));
  EXPECT_FALSE(SymlinkLeavesTree(*root, "x", "de/../.."));  // d/e/../.. is the root
  EXPECT_TRUE(SymlinkLeavesTree(*root, "x", "de/../../.."));
  EXPECT_TRUE(SymlinkLeavesTree(*root, "d/e/x", "../../.."));
  EXPECT_FALSE(SymlinkLeavesTree(*root, "d/e/x", "../../d"));
  EXPECT_TRUE(SymlinkLeavesTree(*root, "x", "d/up/.."));  // d/up is the root
  EXPECT_FALSE(SymlinkLeavesTree(*root, "x", "d/up/d"));
  EXPECT_TRUE(SymlinkLeavesTree(*root, "x", "/anything"));
  EXPECT_FALSE(SymlinkLeavesTree(*root, "x", ""));
}

}  // namespace
}  // namespace lazaret::cli::workspace
