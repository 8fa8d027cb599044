// Paths inside a workspace that host configuration names: the directories,
// programs and files the host repository's git config points into the
// working tree (a core.hooksPath of ".githooks", a filter driver
// "./tools/clean.sh", an include.path of "../shared.gitconfig" from a
// config inside the tree), and the files an acted-on file's text names (a
// Claude Code hook "$CLAUDE_PROJECT_DIR/scripts/lint.sh"). Host programs run
// or read these on their own, so the `lazaret` CLI holds them like the
// catalogue's (catalogue.h). Pure: lexical decisions on strings the host's
// config and the agent's files hold; never touches the disk.
#ifndef LAZARET_SERVICES_COMMON_WORKSPACE_NAMED_PATHS_H_
#define LAZARET_SERVICES_COMMON_WORKSPACE_NAMED_PATHS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace lazaret::workspace {

// One line of `git config --list --show-origin`.
struct GitConfigEntry {
  std::string key;  // as git prints it: section and variable lower-cased
  std::string value;
  std::string origin;  // as `git config --show-origin` prints it ("file:/abs/.git/config")
};

struct NamedPath {
  std::string rel;  // clean, relative to the workspace; never "" (the root itself is not named)
  std::string key;  // the config key that named it
  bool directory;   // named as a directory (hooksPath, templateDir)
};

// Relative paths inside `workspace` (host, canonical) that git config values
// name (hooksPath and similar directories, programs/scripts in command
// values resolved against `worktree_top`, include.path/includeIf.*.path
// against the origin file's directory, ~ against `home`). Generic over every
// key: any value token that resolves inside the workspace counts, not a list
// of key names only. Sorted by rel, one entry per rel (the first key wins).
std::vector<NamedPath> PathsNamedByGitConfig(const std::vector<GitConfigEntry>& entries,
                                             const std::string& worktree_top,
                                             const std::string& workspace, const std::string& home);

// Bounds of PathsNamedInText.
inline constexpr size_t kMaxNamedTextBytes = 1 << 20;
inline constexpr size_t kMaxNamedTextTokens = 256;

// Tokens in an acted-on file's text (JSON/TOML/YAML/shell) that may name a
// file in the tree, relative to its root ("$CLAUDE_PROJECT_DIR/",
// "${workspaceFolder}/", "./" prefixes removed); the caller keeps those
// that exist as regular files. Reads at most kMaxNamedTextBytes of `text`
// and returns at most kMaxNamedTextTokens distinct tokens, in order of
// first appearance.
std::vector<std::string> PathsNamedInText(absl::string_view text);

// `path` with "." and empty components removed and ".." applied lexically
// (never touching the disk). A ".." above the start of a relative path is
// dropped and sets `*climbed_out`; above "/" it stays at "/", as the kernel
// resolves it. Absolute in, absolute out.
std::string LexicallyNormal(absl::string_view path, bool* climbed_out = nullptr);

}  // namespace lazaret::workspace

#endif  // LAZARET_SERVICES_COMMON_WORKSPACE_NAMED_PATHS_H_
