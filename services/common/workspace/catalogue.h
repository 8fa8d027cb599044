// The catalogue of files host programs act on by themselves (docs/threat-model.md
// "Files host programs act on"): editors and IDEs, shells and environment
// managers, build and hook managers, and coding agents' project settings,
// hooks, command and MCP server lists, rules and instruction files. It is the
// one list in the code; three processes consult it:
//  - the `lazaret` CLI holds every catalogue path of a workspace in a
//    per-session view (docs/operations.md "Held changes"), so what the agent
//    writes there reaches the host folder only when the developer applies it;
//  - the CLI's end-of-session scan names the catalogue files the session
//    created or changed in the profile's read-write volumes;
//  - lazaret-brokerd refuses to auto-approve an escalation aimed at a
//    directory holding one (docs/escalation.md "Planted code").
//
// Membership rule: a path is in the catalogue when a host program acts on it
// as soon as the developer opens the folder, enters it, or runs any command
// of that tool there, and what it finds can make that program run something
// the developer did not ask for (settings that run commands, hooks, command
// or MCP server lists, interpreter or toolchain pins, rules and instruction
// files that steer an agent). Project content the developer builds or runs
// deliberately (a Makefile, package.json scripts, the sources) is not in it:
// running that is the developer's explicit choice, and holding it would hold
// the whole project.
//
// Pure: decisions on names and relative paths the agent chose; no I/O.
#ifndef LAZARET_SERVICES_COMMON_WORKSPACE_CATALOGUE_H_
#define LAZARET_SERVICES_COMMON_WORKSPACE_CATALOGUE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace lazaret::workspace {

// Which kind of host program acts on the path.
enum class ActedOnBy { kEditor, kShell, kBuild, kAgent };

// kAnyDirectory: `path` is one name (possibly with a '*' glob) that counts in
// every directory of the tree. kWorkspaceRoot: `path` is a relative path
// (one or more components, no glob) that counts only from the workspace
// root.
enum class Where { kAnyDirectory, kWorkspaceRoot };

struct CatalogueEntry {
  absl::string_view path;  // a name (".envrc", "*.code-workspace") or a relative path
                           // (".github/copilot-instructions.md")
  Where where;
  ActedOnBy by;
  absl::string_view tools;  // e.g. "Claude Code"
  bool directory;           // the whole directory counts
};

// Every entry, in a fixed order.
absl::Span<const CatalogueEntry> Catalogue();

struct CatalogueMatch {
  std::string rel;
  const CatalogueEntry* entry;
};

// The catalogue instance `rel` (clean, relative, no "."/"..") is or lies in:
// e.g. "sub/.vscode" for "sub/.vscode/tasks.json"; the outermost match wins.
// nullopt when none. A name entry (kAnyDirectory) matches a component of
// `rel`; a non-directory entry matches only the last component (a file
// named ".envrc" counts, a directory named ".envrc" with files in it counts
// as the instance itself, never as a container of instances). Exact on
// bytes: Linux names are case-sensitive, so ".Claude" is not ".claude".
std::optional<CatalogueMatch> MatchCatalogue(absl::string_view rel);

// True for the names of kAnyDirectory entries (one path component). Kept for
// lazaret-brokerd's planted-code check, which looks at one name at a time.
bool IsHostToolActedOnName(absl::string_view name);

// "editor", "shell", "build", "agent".
absl::string_view ActedOnByName(ActedOnBy by);

}  // namespace lazaret::workspace

#endif  // LAZARET_SERVICES_COMMON_WORKSPACE_CATALOGUE_H_
