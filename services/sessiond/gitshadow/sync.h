// Keeping one repository's Git Shadow state and the host repository in
// step. Runs in the `lazaret` CLI on the host, as the developer: before a
// sandbox starts (SyncStateFromHost, from PlanGitShadow: the host is the
// truth), while it runs and after it ends (WriteBack, every 2 s and at
// teardown), and from `lazaret clean` (WriteBackAll, for sessions that did
// not end cleanly). Everything the sandbox wrote is distrusted and goes
// through the import (import.h); the host repository is the developer's.
// Each runs under the state's StateLock (state.h).
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_SYNC_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_SYNC_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "services/sessiond/gitshadow/import.h"
#include "services/sessiond/gitshadow/refs.h"
#include "services/sessiond/gitshadow/state.h"

namespace lazaret::cli::gitshadow {

// Host is the truth at session start. The sandbox's writable ref directory
// (mounted at refs/heads/lazaret/) gets:
//  - the session's own branch at the host's value - or, when an import
//    could not bring the last session's work over, at that value, so nothing
//    is lost;
//  - a copy of every other host ref below refs/heads/lazaret/, each inside
//    an entry (ProtectedEntry) the plan binds read-only over itself, so that
//    inside they are visible and cannot be moved, deleted or shadowed
//    (rename onto a mount point fails). At most kMaxProtectedEntries such
//    entries; refs beyond that are visible through the session's
//    packed-refs only, and moving them is dropped at import.
// Records the branch and the protected entries for ImportLocked. Returns the
// protected entries. The caller holds the StateLock.
absl::StatusOr<std::vector<std::string>> SyncStateFromHost(
    const RepoState& state, const RefMap& host, const CheckedAgentBranch& branch,
    const ImportOutcome& outcome, size_t hex_length, std::vector<std::string>* notices);

// Sweeps what the sandbox wrote (object store, agent refs, agent reflogs)
// and imports the session's own branch and its objects into the host
// repository with `git fetch` (hooks off, fsck on, refspecs on stdin, a
// deadline on every git run). Any other ref made or moved inside is reported
// in `rejected` and never imported. Idempotent and cheap when nothing
// changed (one `git for-each-ref`); a pack `git index-pack` refused is not
// copied or indexed again until the file changes, and a failed import is not
// retried until something changed or its backoff ran out. Never deletes a
// host ref.
absl::StatusOr<WriteBackReport> WriteBack(const WriteBackTarget& target,
                                          const WriteBackOptions& options = {});

// WriteBack for every repository recorded under `state_dir` (<profile_dir>/git):
// what `lazaret clean` runs for sessions that did not end cleanly. A missing
// state_dir is not an error.
absl::StatusOr<std::vector<std::pair<WriteBackTarget, WriteBackReport>>> WriteBackAll(
    const std::string& state_dir);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_SYNC_H_
