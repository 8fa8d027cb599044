#include "services/common/workspace/catalogue.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"

namespace lazaret::workspace {
namespace {

// The instance MatchCatalogue finds for `rel`, "" for none.
std::string Instance(const std::string& rel) {
  std::optional<CatalogueMatch> m = MatchCatalogue(rel);
  return m.has_value() ? m->rel : "";
}

std::string Tools(const std::string& rel) {
  std::optional<CatalogueMatch> m = MatchCatalogue(rel);
  return m.has_value() ? std::string(m->entry->tools) : "";
}

TEST(CatalogueTest, EveryEntryIsACleanRelativePath) {
  std::set<std::string> seen;
  for (const CatalogueEntry& e : Catalogue()) {
    const std::string path(e.path);
    SCOPED_TRACE(path);
    ASSERT_FALSE(path.empty());
    EXPECT_NE(path.front(), '/');
    EXPECT_NE(path.back(), '/');
    EXPECT_FALSE(e.tools.empty());
    for (absl::string_view c : absl::StrSplit(path, '/')) {
      EXPECT_FALSE(c.empty());
      EXPECT_NE(c, ".");
      EXPECT_NE(c, "..");
      EXPECT_EQ(c.find('\0'), absl::string_view::npos);
    }
    // Root-only entries are exact paths: a glob there would be matched
    // nowhere else and is a mistake.
    if (e.where == Where::kWorkspaceRoot) {
      EXPECT_EQ(path.find('*'), std::string::npos);
    }
    EXPECT_TRUE(seen.insert(path).second) << "listed twice";
  }
}

TEST(CatalogueTest, EveryEntryMatchesItselfAtTheRootAndTheRightDepths) {
  for (const CatalogueEntry& e : Catalogue()) {
    std::string path(e.path);
    for (char& c : path) {
      if (c == '*') c = 'x';
    }
    SCOPED_TRACE(path);
    EXPECT_EQ(Instance(path), path);
    if (e.directory) {
      EXPECT_EQ(Instance(path + "/inner/file"), path);
    }
    if (e.where == Where::kAnyDirectory) {
      EXPECT_EQ(Instance("a/b/" + path), "a/b/" + path);
    } else {
      EXPECT_EQ(Instance("a/b/" + path), "");
    }
  }
}

TEST(CatalogueTest, EditorFiles) {
  EXPECT_EQ(Instance(".vscode/tasks.json"), ".vscode");
  EXPECT_EQ(Instance("sub/.vscode/tasks.json"), "sub/.vscode");
  EXPECT_EQ(Tools("sub/.vscode/tasks.json"), "VS Code");
  EXPECT_EQ(Instance("proj.code-workspace"), "proj.code-workspace");
  EXPECT_EQ(Instance("a/.code-workspace"), "a/.code-workspace");
  EXPECT_EQ(Instance("x.sublime-project"), "x.sublime-project");
  EXPECT_EQ(Instance(".idea/workspace.xml"), ".idea");
  EXPECT_EQ(Instance(".dir-locals.el"), ".dir-locals.el");
  EXPECT_EQ(Instance("vscode/tasks.json"), "");
  EXPECT_EQ(Instance("proj.code-workspace.bak"), "");
  EXPECT_EQ(Instance("src/main.cc"), "");
}

TEST(CatalogueTest, ShellFiles) {
  EXPECT_EQ(Instance(".envrc"), ".envrc");
  EXPECT_EQ(Instance("deep/er/.envrc"), "deep/er/.envrc");
  EXPECT_EQ(Tools("deep/er/.envrc"), "direnv");
  EXPECT_EQ(Instance(".env.local"), ".env.local");
  EXPECT_EQ(Instance(".env"), ".env");
  EXPECT_EQ(Instance(".config/mise.toml"), ".config/mise.toml");
  EXPECT_EQ(Instance(".config/mise/config.toml"), ".config/mise");
  EXPECT_EQ(Instance(".irbrc"), ".irbrc");
  // A file entry is the last component only: a virtualenv called .env is a
  // directory whose contents are not direnv's file.
  EXPECT_EQ(Instance(".env/bin/activate"), "");
  EXPECT_EQ(Instance(".envrc.sample"), "");
  EXPECT_EQ(Instance("envrc"), "");
  EXPECT_EQ(Instance(".config/other.toml"), "");
}

TEST(CatalogueTest, BuildAndHookManagers) {
  EXPECT_EQ(Instance(".husky/pre-commit"), ".husky");
  EXPECT_EQ(Instance(".githooks/pre-commit"), ".githooks");
  EXPECT_EQ(Instance("lefthook.yml"), "lefthook.yml");
  EXPECT_EQ(Instance(".lefthook/pre-commit/x.sh"), ".lefthook");
  EXPECT_EQ(Instance(".simple-git-hooks.cjs"), ".simple-git-hooks.cjs");
  EXPECT_EQ(Instance("web/.yarnrc.yml"), "web/.yarnrc.yml");
  EXPECT_EQ(Instance(".yarn/releases/yarn-4.js"), ".yarn/releases");
  EXPECT_EQ(Instance("web/.yarn/plugins/p.cjs"), "web/.yarn/plugins");
  EXPECT_EQ(Instance(".yarn/cache/x.zip"), "");
  EXPECT_EQ(Instance(".mvn/jvm.config"), ".mvn");
  EXPECT_EQ(Instance("gradle/wrapper/gradle-wrapper.properties"), "gradle/wrapper");
  EXPECT_EQ(Instance("sub/gradle/wrapper/gradle-wrapper.properties"), "");
  EXPECT_EQ(Instance("crates/a/.cargo/config.toml"), "crates/a/.cargo");
  EXPECT_EQ(Instance("rust-toolchain.toml"), "rust-toolchain.toml");
  EXPECT_EQ(Instance("tools/bazel"), "tools/bazel");
  EXPECT_EQ(Instance("tools/bazel/x"), "");
  EXPECT_EQ(Instance("sub/tools/bazel"), "");
  EXPECT_EQ(Instance("Makefile"), "");
  EXPECT_EQ(Instance("package.json"), "");
}

TEST(CatalogueTest, CodingAgents) {
  EXPECT_EQ(Instance(".claude/settings.json"), ".claude");
  EXPECT_EQ(Tools(".claude/settings.json"), "Claude Code");
  EXPECT_EQ(Instance("pkg/.claude/commands/x.md"), "pkg/.claude");
  EXPECT_EQ(Instance("pkg/CLAUDE.md"), "pkg/CLAUDE.md");
  EXPECT_EQ(Instance(".mcp.json"), ".mcp.json");
  EXPECT_EQ(Instance(".codex/config.toml"), ".codex");
  EXPECT_EQ(Instance("svc/AGENTS.md"), "svc/AGENTS.md");
  EXPECT_EQ(Instance(".gemini/settings.json"), ".gemini");
  EXPECT_EQ(Instance(".cursor/mcp.json"), ".cursor");
  EXPECT_EQ(Instance(".github/copilot-instructions.md"), ".github/copilot-instructions.md");
  EXPECT_EQ(Instance(".github/prompts/x.prompt.md"), ".github/prompts");
  EXPECT_EQ(Instance("sub/.github/prompts/x.prompt.md"), "");
  EXPECT_EQ(Instance(".github/workflows/ci.yml"), "");
  EXPECT_EQ(Instance(".clinerules"), ".clinerules");
  EXPECT_EQ(Instance(".clinerules/01.md"), ".clinerules");
  EXPECT_EQ(Instance(".roorules-code"), ".roorules-code");
  EXPECT_EQ(Instance("opencode.jsonc"), "opencode.jsonc");
  EXPECT_EQ(Instance(".kiro/steering/x.md"), ".kiro");
  EXPECT_EQ(Instance("README.md"), "");
}

TEST(CatalogueTest, TheOutermostInstanceWins) {
  // A catalogue name inside a catalogue directory belongs to the outer one.
  EXPECT_EQ(Instance(".vscode/.envrc"), ".vscode");
  EXPECT_EQ(Instance(".claude/.vscode/settings.json"), ".claude");
  EXPECT_EQ(Instance("a/.husky/.git-hooks/x"), "a/.husky");
  EXPECT_EQ(Instance(".config/mise/.envrc"), ".config/mise");
}

TEST(CatalogueTest, NamesAreExactBytes) {
  // Linux names are case-sensitive: ".Claude" is another directory, which
  // Claude Code does not read.
  EXPECT_EQ(Instance(".Claude/settings.json"), "");
  EXPECT_EQ(Instance(".ENVRC"), "");
  EXPECT_EQ(Instance(".envrc "), "");
  EXPECT_EQ(Instance(std::string(".envrc\0x", 8)), "");
  EXPECT_EQ(Instance(".claude\n/settings.json"), "");
  // Odd bytes around a matching name are not refused: the match is exact.
  EXPECT_EQ(Instance("\xff/\n/.envrc"), "\xff/\n/.envrc");
  EXPECT_EQ(Instance(""), "");
}

TEST(CatalogueTest, GlobsMatchWithinOneComponent) {
  EXPECT_EQ(Instance("a.code-workspace"), "a.code-workspace");
  EXPECT_EQ(Instance("a/b.code-workspace"), "a/b.code-workspace");
  EXPECT_EQ(Instance("x.code-workspace/y"), "");
  EXPECT_EQ(Instance(".env."), ".env.");
  EXPECT_EQ(Instance("a.env.b"), "");
  EXPECT_EQ(Instance("mise.dev.toml"), "mise.dev.toml");
  EXPECT_EQ(Instance("mise.toml.bak"), "");
}

TEST(CatalogueTest, BrokerNamesCoverEveryAnyDirectoryName) {
  for (const CatalogueEntry& e : Catalogue()) {
    if (e.where != Where::kAnyDirectory) continue;
    std::string first(e.path.substr(0, e.path.find('/')));
    for (char& c : first) {
      if (c == '*') c = 'q';
    }
    EXPECT_TRUE(IsHostToolActedOnName(first)) << first;
  }
  EXPECT_TRUE(IsHostToolActedOnName(".claude"));
  EXPECT_TRUE(IsHostToolActedOnName("AGENTS.md"));
  EXPECT_TRUE(IsHostToolActedOnName(".env.production"));
  EXPECT_FALSE(IsHostToolActedOnName("src"));
  EXPECT_FALSE(IsHostToolActedOnName(""));
  EXPECT_FALSE(IsHostToolActedOnName(".Claude"));
  EXPECT_FALSE(IsHostToolActedOnName("Makefile"));
}

TEST(CatalogueTest, EveryKindIsRepresented) {
  std::set<ActedOnBy> kinds;
  for (const CatalogueEntry& e : Catalogue()) kinds.insert(e.by);
  EXPECT_EQ(kinds.size(), 4u);
  EXPECT_EQ(ActedOnByName(ActedOnBy::kAgent), "agent");
}

}  // namespace
}  // namespace lazaret::workspace
