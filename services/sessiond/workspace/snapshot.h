// The snapshot of the git directories in the trees the sandbox could write,
// taken by the `lazaret` CLI on the host before the sandbox starts, and kept
// in the session directory so that the reap of a session whose CLI died
// (`lazaret clean`) can still tell what the session planted or changed.
// The snapshot file is Lazaret's own; ParseSnapshot still refuses one that
// names a root that is not an absolute path or a git directory outside its
// roots.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_SNAPSHOT_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_SNAPSHOT_H_

#include <time.h>

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "services/sessiond/workspace/roots.h"

namespace lazaret::cli::workspace {

// The git directories found in the roots when the sandbox started, by root
// index and path relative to it ("." for the root itself), with their
// fingerprints.
struct GitDirSnapshot {
  timespec since{};
  std::string session_id;
  std::vector<ScanRoot> roots;
  std::map<std::pair<size_t, std::string>, std::string> prints;
  bool complete = true;    // false: a limit stopped the walk (reported)
  bool quarantine = true;  // the profile did not opt out
};

// Walks the roots (sandbox not started yet) and records every git
// directory: a directory git's discovery would take for one (HEAD that is
// not a directory, plus objects/ and refs/, or plus commondir - setup.c
// is_git_directory), and every `.git` that is not a directory (gitfile or
// symlink). `root_git_protected` roots whose .git does not exist are
// recorded as unprotected.
absl::StatusOr<GitDirSnapshot> TakeGitDirSnapshot(const std::string& session_id,
                                                  std::vector<ScanRoot> roots, bool quarantine,
                                                  const ScanLimits& limits = {});

// The snapshot as the bytes of its file in the session directory (for the
// reap of a killed session): lazaret.common.v1.WorkspaceSnapshot.
std::string SerializeSnapshot(const GitDirSnapshot& snapshot);
absl::StatusOr<GitDirSnapshot> ParseSnapshot(const std::string& text);

// Name of the snapshot file in the session directory.
inline constexpr char kSnapshotFileName[] = "workspace-scan";

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_SNAPSHOT_H_
