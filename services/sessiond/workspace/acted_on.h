// Discovery of the paths host programs act on in a workspace, as the `lazaret`
// CLI finds them on the host before the sandbox starts: the catalogue
// instances that exist (services/common/workspace/catalogue.h), the paths
// the host's git config names inside the working tree
// (services/common/workspace/named_paths.h), and the regular files that the
// text of existing acted-on files names (a hook script). The session holds
// each of them in a per-session view (docs/operations.md "Held changes").
// Runs as the developer (or root for rootful podman). Everything below the
// workspace may have been written by an earlier agent: the walk goes through
// directory descriptors (O_DIRECTORY|O_NOFOLLOW, one component at a time),
// never follows a symlink, and reads file text only through an
// O_NOFOLLOW descriptor whose fstat says it is a regular file.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_ACTED_ON_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_ACTED_ON_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/sessiond/workspace/roots.h"

namespace lazaret::cli::workspace {

// What lstat says the path is now (kAbsent: named by git config, missing).
enum class PathType { kFile, kDirectory, kSymlink, kOther, kAbsent };

struct ActedOnPath {
  std::string rel;  // clean, relative to the workspace
  // Who acts on it: "Claude Code", "core.hooksPath (file:/home/u/r/.git/config)",
  // "named by .claude/settings.json".
  std::string why;
  PathType type;
};

struct ActedOnPaths {
  // Sorted by rel, de-duplicated, outermost only (nothing inside another
  // returned directory).
  std::vector<ActedOnPath> paths;
  // What could not be checked (an unreadable directory, the walk's limits,
  // git that could not run), for the caller to report.
  std::vector<std::string> problems;
};

// Bounds of the text-named files.
inline constexpr size_t kMaxTextNamedFiles = 64;
inline constexpr size_t kMaxActedOnTextBytes = 1 << 20;

// Every catalogue instance that exists in `workspace` (absolute, canonical)
// now, the paths its host git config names inside it (kAbsent when
// missing), and regular files named in the text of existing acted-on
// files. `home` is the developer's home (for "~" in git config values).
absl::StatusOr<ActedOnPaths> FindActedOnPaths(const std::string& workspace, const std::string& home,
                                              const ScanLimits& limits = {});

// "file", "directory", "symlink", "other", "absent".
const char* PathTypeName(PathType type);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_ACTED_ON_H_
