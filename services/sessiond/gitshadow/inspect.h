// Finding and checking the host repository a workspace belongs to. Runs in
// the `lazaret` CLI on the host, as the developer, before a sandbox starts
// (and for the agent worktree of --worktree). The host repository is the
// developer's and trusted, but not every layout can be presented to the
// sandbox safely: bare repositories, repositories with alternates, a branch
// named `lazaret` and submodules whose git directory is not absorbed are
// refused, each with a message saying what to do, and every path that
// becomes a mount must be expressible in podman's arguments. Paths are the
// ones host git reports, made canonical.
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_INSPECT_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_INSPECT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/sessiond/gitshadow/refs.h"

namespace lazaret::cli::gitshadow {

// The repository a workspace belongs to, as host git reports it, every path
// canonical. Only InspectRepo makes one.
struct CheckedRepo {
  std::string top;         // the work tree's top directory
  std::string git_dir;     // this work tree's git dir (per-worktree for a linked worktree)
  std::string common_dir;  // GIT_COMMON_DIR: objects, refs, config, hooks
  std::string index;       // this work tree's index file (may not exist yet)
  std::string object_format;
  size_t hex_length = 40;
  bool linked() const { return git_dir != common_dir; }
};

enum class RepoKind { kNone, kSubdirectory, kRepo };

struct Inspection {
  RepoKind kind = RepoKind::kNone;
  CheckedRepo repo;  // kRepo and kSubdirectory (then `top` is the containing top)
};

// realpath(3).
absl::StatusOr<std::string> CanonicalPath(const std::string& path);

// lstat(2) tests of paths Lazaret trusts (a symlink is none of these).
bool IsDirectoryPath(const std::string& path);
bool IsRegularFilePath(const std::string& path);
bool PathExists(const std::string& path);

// Paths end up in podman arguments (`-v a:b:ro`, `--mount type=bind,src=...`)
// and in the developer's terminal. Refuse what cannot be expressed there
// unambiguously rather than quote it.
absl::Status CheckMountablePath(const std::string& path, const std::string& what);

// Whether `dir` is in no repository, in a subdirectory of one, or at the top
// of a work tree. Refuses bare repositories and git directories.
absl::StatusOr<Inspection> InspectRepo(const std::string& dir);

// Refuses host repositories whose layout the shadow cannot present safely.
absl::Status CheckRepoLayout(const CheckedRepo& repo);

// Every host ref at or below refs/heads/lazaret. A branch named exactly
// `lazaret` would collide with the agent namespace mount.
absl::StatusOr<RefMap> HostAgentRefs(const std::string& common_dir);

// The commit the workspace's HEAD points at, if it has one.
absl::StatusOr<std::optional<std::string>> HeadCommit(const CheckedRepo& repo);

// An initialized, absorbed submodule: its .git file in the work tree, pinned
// read-only inside the sandbox.
struct Submodule {
  std::string path;      // relative to the work tree top
  std::string git_file;  // absolute host path of <top>/<path>/.git
};

// Finds initialized submodules below `work_tree` (recursively) and checks
// each is absorbed: its .git is a file pointing into <common>/modules/.
// Anything else is refused - a .git directory inside the working tree (or a
// .git file pointing elsewhere) would give the agent a git directory whose
// config host git reads when it recurses into submodules.
absl::Status FindSubmodules(const CheckedRepo& repo, const std::string& git_dir,
                            const std::string& rel_prefix, int depth, std::vector<Submodule>* out);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_INSPECT_H_
