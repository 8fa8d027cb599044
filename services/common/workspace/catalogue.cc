#include "services/common/workspace/catalogue.h"

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lazaret::workspace {
namespace {

using B = ActedOnBy;
using W = Where;

// The sources of each tool's entries are in docs/threat-model.md ("Files host
// programs act on"); keep the two in step. Any-directory unless the tool
// reads the path only at the project root and nothing else (a monorepo tool
// that walks parent or child directories counts as any-directory). A '*' in
// a name matches any run of characters within one component.
constexpr CatalogueEntry kCatalogue[] = {
    // Editors and IDEs: workspace settings, tasks, launch configurations,
    // recommended extensions, language-server settings, dev containers,
    // per-directory scripts.
    {".vscode", W::kAnyDirectory, B::kEditor, "VS Code", true},
    {"*.code-workspace", W::kAnyDirectory, B::kEditor, "VS Code", false},
    {".vs", W::kAnyDirectory, B::kEditor, "Visual Studio", true},
    {".idea", W::kAnyDirectory, B::kEditor, "JetBrains IDEs", true},
    {".fleet", W::kAnyDirectory, B::kEditor, "JetBrains Fleet", true},
    {".zed", W::kAnyDirectory, B::kEditor, "Zed", true},
    {".helix", W::kAnyDirectory, B::kEditor, "Helix", true},
    {".devcontainer", W::kAnyDirectory, B::kEditor, "Dev Containers", true},
    {".devcontainer.json", W::kAnyDirectory, B::kEditor, "Dev Containers", false},
    {".editorconfig", W::kAnyDirectory, B::kEditor, "EditorConfig", false},
    {".clangd", W::kAnyDirectory, B::kEditor, "clangd", false},
    {".exrc", W::kAnyDirectory, B::kEditor, "Vim/Neovim (exrc)", false},
    {".vimrc", W::kAnyDirectory, B::kEditor, "Vim/Neovim (exrc)", false},
    {".gvimrc", W::kAnyDirectory, B::kEditor, "Vim/Neovim (exrc)", false},
    {".nvimrc", W::kAnyDirectory, B::kEditor, "Vim/Neovim (exrc)", false},
    {".nvim.lua", W::kAnyDirectory, B::kEditor, "Vim/Neovim (exrc)", false},
    {".lazy.lua", W::kAnyDirectory, B::kEditor, "lazy.nvim", false},
    {".dir-locals.el", W::kAnyDirectory, B::kEditor, "Emacs", false},
    {".dir-locals-2.el", W::kAnyDirectory, B::kEditor, "Emacs", false},
    {"*.sublime-project", W::kAnyDirectory, B::kEditor, "Sublime Text", false},

    // Shells and environment managers that act on `cd`, and interpreters and
    // debuggers that run a start-up file from the current directory.
    {".envrc", W::kAnyDirectory, B::kShell, "direnv", false},
    {".direnv", W::kAnyDirectory, B::kShell, "direnv", true},
    {".env", W::kAnyDirectory, B::kShell, "direnv, autoenv, dotenv loaders", false},
    {".env.*", W::kAnyDirectory, B::kShell, "dotenv loaders", false},
    {".flaskenv", W::kAnyDirectory, B::kShell, "Flask", false},
    {".autoenv", W::kAnyDirectory, B::kShell, "autoenv", false},
    {".autoenv.zsh", W::kAnyDirectory, B::kShell, "autoenv", false},
    {".autoenv_leave", W::kAnyDirectory, B::kShell, "autoenv", false},
    {".nvmrc", W::kAnyDirectory, B::kShell, "nvm", false},
    {".node-version", W::kAnyDirectory, B::kShell, "nodenv, fnm", false},
    {".python-version", W::kAnyDirectory, B::kShell, "pyenv, uv", false},
    {".ruby-version", W::kAnyDirectory, B::kShell, "rbenv, rvm", false},
    {".java-version", W::kAnyDirectory, B::kShell, "jenv", false},
    {".sdkmanrc", W::kAnyDirectory, B::kShell, "SDKMAN!", false},
    {".tool-versions", W::kAnyDirectory, B::kShell, "asdf, mise", false},
    {"mise.toml", W::kAnyDirectory, B::kShell, "mise", false},
    {".mise.toml", W::kAnyDirectory, B::kShell, "mise", false},
    {"mise.local.toml", W::kAnyDirectory, B::kShell, "mise", false},
    {".mise.local.toml", W::kAnyDirectory, B::kShell, "mise", false},
    {"mise.*.toml", W::kAnyDirectory, B::kShell, "mise", false},
    {".mise.*.toml", W::kAnyDirectory, B::kShell, "mise", false},
    {".mise", W::kAnyDirectory, B::kShell, "mise", true},
    {"mise/config.toml", W::kAnyDirectory, B::kShell, "mise", false},
    {".config/mise.toml", W::kAnyDirectory, B::kShell, "mise", false},
    {".config/mise", W::kAnyDirectory, B::kShell, "mise", true},
    {".rtx.toml", W::kAnyDirectory, B::kShell, "rtx (mise)", false},
    {".irbrc", W::kAnyDirectory, B::kShell, "irb", false},
    {".pryrc", W::kAnyDirectory, B::kShell, "pry", false},
    {".pdbrc", W::kAnyDirectory, B::kShell, "Python pdb", false},
    {".Rprofile", W::kAnyDirectory, B::kShell, "R", false},
    {".ghci", W::kAnyDirectory, B::kShell, "GHCi", false},
    {".octaverc", W::kAnyDirectory, B::kShell, "GNU Octave", false},
    {".gdbinit", W::kAnyDirectory, B::kShell, "gdb", false},
    {".lldbinit", W::kAnyDirectory, B::kShell, "lldb", false},

    // Git's own files in the working tree: attributes select filter and diff
    // drivers, submodule settings, LFS endpoints. The directories the host's
    // git config points into the tree (core.hooksPath and the like) are read
    // from that config (named_paths.h); .githooks and .git-hooks are the
    // usual names, held even before a config names them.
    {".gitattributes", W::kAnyDirectory, B::kBuild, "git", false},
    {".gitmodules", W::kAnyDirectory, B::kBuild, "git", false},
    {".lfsconfig", W::kAnyDirectory, B::kBuild, "Git LFS", false},
    {".githooks", W::kAnyDirectory, B::kBuild, "git (core.hooksPath)", true},
    {".git-hooks", W::kAnyDirectory, B::kBuild, "git (core.hooksPath)", true},

    // Hook managers: they install or run hooks on every commit.
    {".husky", W::kAnyDirectory, B::kBuild, "husky", true},
    {".pre-commit-config.yaml", W::kAnyDirectory, B::kBuild, "pre-commit", false},
    {".pre-commit-config.yml", W::kAnyDirectory, B::kBuild, "pre-commit", false},
    {"lefthook.*", W::kAnyDirectory, B::kBuild, "Lefthook", false},
    {".lefthook.*", W::kAnyDirectory, B::kBuild, "Lefthook", false},
    {"lefthook-local.*", W::kAnyDirectory, B::kBuild, "Lefthook", false},
    {".lefthook-local.*", W::kAnyDirectory, B::kBuild, "Lefthook", false},
    {".lefthook", W::kAnyDirectory, B::kBuild, "Lefthook", true},
    {".lefthook-local", W::kAnyDirectory, B::kBuild, "Lefthook", true},
    {".overcommit.yml", W::kAnyDirectory, B::kBuild, "Overcommit", false},
    {".simple-git-hooks.*", W::kAnyDirectory, B::kBuild, "simple-git-hooks", false},
    {"simple-git-hooks.*", W::kAnyDirectory, B::kBuild, "simple-git-hooks", false},

    // Build tools and toolchain managers: read on any invocation, before the
    // developer's own build runs, and able to name a program or download one.
    {".npmrc", W::kAnyDirectory, B::kBuild, "npm, pnpm", false},
    {".yarnrc", W::kAnyDirectory, B::kBuild, "Yarn", false},
    {".yarnrc.yml", W::kAnyDirectory, B::kBuild, "Yarn", false},
    {".yarn/releases", W::kAnyDirectory, B::kBuild, "Yarn", true},
    {".yarn/plugins", W::kAnyDirectory, B::kBuild, "Yarn", true},
    {".pnpmfile.*", W::kAnyDirectory, B::kBuild, "pnpm", false},
    {"bunfig.toml", W::kAnyDirectory, B::kBuild, "Bun", false},
    {".bunfig.toml", W::kAnyDirectory, B::kBuild, "Bun", false},
    {".mvn", W::kAnyDirectory, B::kBuild, "Maven", true},
    {"gradle/wrapper", W::kWorkspaceRoot, B::kBuild, "Gradle wrapper", true},
    {".cargo", W::kAnyDirectory, B::kBuild, "Cargo", true},
    {"rust-toolchain", W::kAnyDirectory, B::kBuild, "rustup", false},
    {"rust-toolchain.toml", W::kAnyDirectory, B::kBuild, "rustup", false},
    {".bazelrc", W::kAnyDirectory, B::kBuild, "Bazel", false},
    {".bazelversion", W::kAnyDirectory, B::kBuild, "Bazelisk", false},
    {".bazeliskrc", W::kAnyDirectory, B::kBuild, "Bazelisk", false},
    {"tools/bazel", W::kWorkspaceRoot, B::kBuild, "Bazelisk", false},
    {"uv.toml", W::kAnyDirectory, B::kBuild, "uv", false},

    // Coding agents: project settings (permissions, hooks that run commands,
    // MCP servers), custom commands and sub-agents, rules and instruction
    // files that steer what the agent does next.
    {".claude", W::kAnyDirectory, B::kAgent, "Claude Code", true},
    {"CLAUDE.md", W::kAnyDirectory, B::kAgent, "Claude Code", false},
    {"CLAUDE.local.md", W::kAnyDirectory, B::kAgent, "Claude Code", false},
    {".mcp.json", W::kAnyDirectory, B::kAgent, "Claude Code (MCP servers)", false},
    {".codex", W::kAnyDirectory, B::kAgent, "OpenAI Codex", true},
    {"AGENTS.md", W::kAnyDirectory, B::kAgent, "OpenAI Codex and others (AGENTS.md)", false},
    {"AGENTS.override.md", W::kAnyDirectory, B::kAgent, "OpenAI Codex", false},
    {".gemini", W::kAnyDirectory, B::kAgent, "Gemini CLI", true},
    {"GEMINI.md", W::kAnyDirectory, B::kAgent, "Gemini CLI", false},
    {".geminiignore", W::kAnyDirectory, B::kAgent, "Gemini CLI", false},
    {".cursor", W::kAnyDirectory, B::kAgent, "Cursor", true},
    {".cursorrules", W::kAnyDirectory, B::kAgent, "Cursor", false},
    {".cursorignore", W::kAnyDirectory, B::kAgent, "Cursor", false},
    {".cursorindexingignore", W::kAnyDirectory, B::kAgent, "Cursor", false},
    {".github/copilot-instructions.md", W::kWorkspaceRoot, B::kAgent, "GitHub Copilot", false},
    {".github/instructions", W::kWorkspaceRoot, B::kAgent, "GitHub Copilot", true},
    {".github/prompts", W::kWorkspaceRoot, B::kAgent, "GitHub Copilot", true},
    {".github/chatmodes", W::kWorkspaceRoot, B::kAgent, "GitHub Copilot", true},
    {".github/agents", W::kWorkspaceRoot, B::kAgent, "GitHub Copilot", true},
    {".github/skills", W::kWorkspaceRoot, B::kAgent, "GitHub Copilot", true},
    {".windsurf", W::kAnyDirectory, B::kAgent, "Windsurf", true},
    {".windsurfrules", W::kAnyDirectory, B::kAgent, "Windsurf", false},
    {".codeiumignore", W::kAnyDirectory, B::kAgent, "Windsurf", false},
    {".clinerules", W::kAnyDirectory, B::kAgent, "Cline", true},
    {".clineignore", W::kAnyDirectory, B::kAgent, "Cline", false},
    {".roo", W::kAnyDirectory, B::kAgent, "Roo Code", true},
    {".roomodes", W::kAnyDirectory, B::kAgent, "Roo Code", false},
    {".roorules*", W::kAnyDirectory, B::kAgent, "Roo Code", false},
    {".rooignore", W::kAnyDirectory, B::kAgent, "Roo Code", false},
    {".continue", W::kAnyDirectory, B::kAgent, "Continue", true},
    {".continuerc.json", W::kAnyDirectory, B::kAgent, "Continue", false},
    {".aider.conf.yml", W::kAnyDirectory, B::kAgent, "aider", false},
    {".aider.model.settings.yml", W::kAnyDirectory, B::kAgent, "aider", false},
    {".aider.model.metadata.json", W::kAnyDirectory, B::kAgent, "aider", false},
    {".aiderignore", W::kAnyDirectory, B::kAgent, "aider", false},
    {".amazonq", W::kAnyDirectory, B::kAgent, "Amazon Q Developer", true},
    {".kiro", W::kAnyDirectory, B::kAgent, "Kiro", true},
    {".junie", W::kAnyDirectory, B::kAgent, "JetBrains Junie", true},
    {"opencode.json", W::kAnyDirectory, B::kAgent, "opencode", false},
    {"opencode.jsonc", W::kAnyDirectory, B::kAgent, "opencode", false},
    {".opencode", W::kAnyDirectory, B::kAgent, "opencode", true},
    {".goosehints", W::kAnyDirectory, B::kAgent, "Goose", false},
    {".rules", W::kAnyDirectory, B::kAgent, "Zed agent", false},
    {".qwen", W::kAnyDirectory, B::kAgent, "Qwen Code", true},
    {"QWEN.md", W::kAnyDirectory, B::kAgent, "Qwen Code", false},
    {"AGENT.md", W::kAnyDirectory, B::kAgent, "Amp", false},
    {".augment", W::kAnyDirectory, B::kAgent, "Augment", true},
    {".augment-guidelines", W::kAnyDirectory, B::kAgent, "Augment", false},
    {".crush.json", W::kAnyDirectory, B::kAgent, "Crush", false},
    {"crush.json", W::kAnyDirectory, B::kAgent, "Crush", false},
    {"CRUSH.md", W::kAnyDirectory, B::kAgent, "Crush", false},
    {"WARP.md", W::kAnyDirectory, B::kAgent, "Warp", false},
    {".trae", W::kAnyDirectory, B::kAgent, "Trae", true},
    {".kilocode", W::kAnyDirectory, B::kAgent, "Kilo Code", true},
    {".kilocodemodes", W::kAnyDirectory, B::kAgent, "Kilo Code", false},
    {".kilocoderules*", W::kAnyDirectory, B::kAgent, "Kilo Code", false},
    {".kilo", W::kAnyDirectory, B::kAgent, "Kilo Code", true},
    {"kilo.json", W::kAnyDirectory, B::kAgent, "Kilo Code", false},
    {"kilo.jsonc", W::kAnyDirectory, B::kAgent, "Kilo Code", false},
    {".agents", W::kAnyDirectory, B::kAgent, "Agent skills (OpenAI Codex and others)", true},
    {".factory", W::kAnyDirectory, B::kAgent, "Factory Droid", true},
    {".openhands", W::kAnyDirectory, B::kAgent, "OpenHands", true},
};

// Whether `name` (one component) matches `pattern`, where '*' matches any
// run of bytes (none included). Iterative with one backtrack point, so any
// input is linear in practice and never recursive.
bool GlobMatch(absl::string_view pattern, absl::string_view name) {
  size_t p = 0, n = 0;
  size_t star = absl::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != absl::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// The catalogue split for lookups: each entry's components, and the
// entries indexed by their last component (exact names in a hash map, the
// few with a '*' in a list), so that matching one path costs a lookup per
// component rather than a pass over every entry - the walks call it for
// every name in a tree.
struct Index {
  std::vector<std::vector<absl::string_view>> components;
  absl::flat_hash_map<absl::string_view, std::vector<size_t>> by_last;
  std::vector<size_t> glob_last;
};

const Index& CatalogueIndex() {
  static const Index* const kIndex = [] {
    auto* index = new Index();
    for (size_t i = 0; i < std::size(kCatalogue); ++i) {
      index->components.push_back(absl::StrSplit(kCatalogue[i].path, '/'));
      const absl::string_view last = index->components.back().back();
      if (absl::StrContains(last, '*')) {
        index->glob_last.push_back(i);
      } else {
        index->by_last[last].push_back(i);
      }
    }
    return index;
  }();
  return *kIndex;
}

}  // namespace

absl::Span<const CatalogueEntry> Catalogue() { return kCatalogue; }

std::optional<CatalogueMatch> MatchCatalogue(absl::string_view rel) {
  if (rel.empty()) return std::nullopt;
  const std::vector<absl::string_view> parts = absl::StrSplit(rel, '/');
  const Index& index = CatalogueIndex();
  // Whether entry `i` ends at component `end` (exclusive) of `parts`.
  auto matches = [&](size_t i, size_t end) {
    const CatalogueEntry& e = kCatalogue[i];
    const std::vector<absl::string_view>& c = index.components[i];
    if (c.size() > end) return false;
    const size_t start = end - c.size();
    if (e.where == Where::kWorkspaceRoot && start != 0) return false;
    // A file entry is an instance only as the last component: a directory
    // named ".env" (a virtualenv) is not direnv's file.
    if (!e.directory && end != parts.size()) return false;
    for (size_t k = 0; k < c.size(); ++k) {
      if (!GlobMatch(c[k], parts[start + k])) return false;
    }
    return true;
  };
  // The outermost instance is the one that ends first: try each end in
  // turn, and every entry whose last component could end there, in the
  // catalogue's order.
  for (size_t end = 1; end <= parts.size(); ++end) {
    std::optional<size_t> found;
    if (auto it = index.by_last.find(parts[end - 1]); it != index.by_last.end()) {
      for (size_t i : it->second) {
        if (matches(i, end)) {
          found = i;
          break;
        }
      }
    }
    for (size_t i : index.glob_last) {
      if ((!found.has_value() || i < *found) && matches(i, end)) {
        found = i;
        break;
      }
    }
    if (found.has_value()) {
      std::vector<absl::string_view> head(parts.begin(), parts.begin() + end);
      return CatalogueMatch{absl::StrJoin(head, "/"), &kCatalogue[*found]};
    }
  }
  return std::nullopt;
}

bool IsHostToolActedOnName(absl::string_view name) {
  if (name.empty()) return false;
  // The first component of every any-directory entry: the broker looks at
  // one name at a time, and a multi-component entry (".yarn/releases")
  // lives below that name.
  const Index& index = CatalogueIndex();
  for (size_t i = 0; i < index.components.size(); ++i) {
    if (kCatalogue[i].where != Where::kAnyDirectory) continue;
    if (GlobMatch(index.components[i].front(), name)) return true;
  }
  return false;
}

absl::string_view ActedOnByName(ActedOnBy by) {
  switch (by) {
    case ActedOnBy::kEditor:
      return "editor";
    case ActedOnBy::kShell:
      return "shell";
    case ActedOnBy::kBuild:
      return "build";
    case ActedOnBy::kAgent:
      return "agent";
  }
  return "unknown";
}

}  // namespace lazaret::workspace
