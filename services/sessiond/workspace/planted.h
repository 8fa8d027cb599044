// Planted repositories: the git directories in a tree the sandbox could
// write, a fingerprint of what host git takes orders from in each, and the
// quarantine of those the session planted or changed (docs/git-shadow.md
// "Planted repositories"). Runs in the `lazaret` CLI on the host, as the
// developer (or root for rootful podman), before the sandbox starts and
// after it is gone. Every name and byte below a root is the agent's: git
// directories are recognised the way git's own discovery would take them
// (conservatively), fingerprinted without following a symlink or changing
// a mode or time, and neutralised only by renames through directory
// descriptors, each of which a printed shell command undoes.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_PLANTED_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_PLANTED_H_

#include <sys/stat.h>

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "services/sessiond/workspace/roots.h"
#include "services/common/fs/fd.h"

namespace lazaret::cli::workspace {

// A git directory one walk found.
struct FoundGitDir {
  std::string rel;  // "." for the root
  std::string kind;
  std::string print;
  bool layout = false;  // a directory (HEAD renamed), else a `.git` entry
};

// setup.c is_git_directory(): HEAD, and objects/ and refs/ here or in the
// directory commondir names. Conservative: any HEAD but a directory, any
// objects/refs/commondir of any type (git follows symlinks there). `dir` is
// the directory at `rel` ("" for the root).
std::optional<FoundGitDir> GitLayoutAt(const fs::DirFd& dir, const std::string& rel);

// The `.git` entry at `rel` in `parent` that is not a directory (a gitfile
// or a symlink), `st` its fstatat.
FoundGitDir GitFileAt(const fs::DirFd& parent, const std::string& rel, const struct stat& st);

// What one git directory the session planted or changed became.
struct PlantedRepository {
  std::string path;  // absolute, as it was
  std::string kind;  // "nested .git directory", "gitfile", "bare layout", ...
  bool neutralised = false;
  std::string now_at;   // the quarantined name (absolute), when renamed
  std::string inspect;  // a shell command to look at it
  std::string restore;  // a shell command that undoes the quarantine
  std::string error;    // why it could not be neutralised
};

// The suffix a quarantined git entry gets: ".lazaret-quarantine-<session>".
std::string QuarantineSuffix(const std::string& session_id);

// Opens the directory `rel` ("" or "." for the root) below `root`, one
// component at a time, never following a symlink.
absl::StatusOr<fs::DirFd> OpenRel(const std::string& root, const std::string& rel);

// Renames `from` to `from` + suffix (or suffix-2, -3, ...) inside `dir`,
// never replacing anything, and puts the directory's own times back.
absl::StatusOr<std::string> RenameAside(const fs::DirFd& dir, const std::string& from,
                                        const std::string& suffix);

// Moves the git directory `f` of `root` out of git's sight: a git directory
// layout has its HEAD renamed aside (so discovery no longer accepts it), and
// a `.git` entry is itself renamed aside, each with `suffix`. Fills `out`
// with where it went and the shell commands that inspect and restore it, or
// with why it could not be moved.
void Neutralise(const ScanRoot& root, const FoundGitDir& f, const std::string& suffix,
                PlantedRepository* out);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_PLANTED_H_
