// One repository's Git Shadow state (RepoState: <state_dir>/<key>, with
// state_dir <profile_dir>/git) and the locks on it. Runs in the `lazaret`
// CLI on the host, as the developer. Lazaret creates all of it; what the
// sandbox can write there (see RepoState) is swept by the import (import.h)
// before host git reads any of it. The small files that record refs, the
// branch and the host repository are Lazaret's own, and are read back with
// their syntax checked all the same.
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_STATE_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/sessiond/gitshadow/inspect.h"
#include "services/sessiond/gitshadow/refs.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/lock.h"

namespace lazaret::cli::gitshadow {

// What WriteBack needs to find a session's writes and import them. Also
// recorded in the state directory, so `lazaret clean` can import what a
// crashed session left.
struct WriteBackTarget {
  std::string host_common_dir;  // canonical GIT_COMMON_DIR of the host repo
  std::string repo_state_dir;   // <state_dir>/<repo key>
  std::string object_format;    // "sha1" or "sha256"
};

// Exclusive use of one repository's Git Shadow state by one session: held
// (flock on <state>/in-use) from planning until the plan is destroyed, and
// released by the kernel if the process dies. A second session of the same
// profile on the same repository is refused while it is held, since both
// would share the session files and the ref directory. Sessions of other
// profiles have state of their own and run beside it; each can move only its
// own branch.
class StateLease {
 public:
  explicit StateLease(fs::FileLock lock) : lock_(std::move(lock)) {}
  StateLease(const StateLease&) = delete;
  StateLease& operator=(const StateLease&) = delete;

 private:
  fs::FileLock lock_;
};

// The per-repository state directory: <state_dir>/<key>. Lazaret creates it;
// the sandbox sees objects/, refs/, logs/ and session/ (read-write binds,
// swept before host git reads anything from them) and, in worktree mode,
// its worktree. The rest (repo, base, lock, import/, dotgit) only Lazaret
// ever writes.
struct RepoState {
  std::string dir;
  std::string objects() const { return dir + "/objects"; }  // S
  std::string refs() const { return dir + "/refs"; }        // refs/heads/lazaret
  std::string logs() const { return dir + "/logs"; }        // logs/refs/heads/lazaret
  std::string import() const { return dir + "/import"; }    // R, a private bare repo
  std::string session() const { return dir + "/session"; }  // packed-refs, index copy
  std::string dotgit() const { return dir + "/dotgit"; }    // linked worktrees
  std::string worktrees() const { return dir + "/worktrees"; }
};

// The largest session packed-refs file read back.
inline constexpr uint64_t kMaxPackedRefsBytes = 256ull << 20;

// Creates every directory of the relative path `rel` below `root` (never
// following a symlink, fs::MakeOwnDirsAt) and returns the last one; a
// non-directory in the way is removed.
absl::StatusOr<fs::DirFd> EnsureDirPath(const std::string& root, const std::string& rel);

// EnsureDirPath for each of `rels`.
absl::Status EnsureDirPaths(const std::string& root, const std::vector<std::string>& rels);

// Writes a loose ref file `rel` (relative to `root`) holding `oid`.
absl::Status WriteRefFile(const std::string& root, const std::string& rel, const std::string& oid);

// Removes the loose ref file (or whatever is there) at `rel` below `root`.
absl::Status RemoveRefFile(const std::string& root, const std::string& rel);

// Ref maps Lazaret keeps in the state directory, "<oid> <name>" per line,
// names relative to refs/heads/lazaret/:
//  - "base": for the session's branch, the value host and sandbox last
//    agreed on. Moved away from its base, it is the agent's work to import;
//    still at its base, it is left to the host.
//  - "visible": the other host refs below refs/heads/lazaret/ as the
//    session saw them at its start (its packed-refs has them too).
absl::StatusOr<RefMap> ReadRefMapFile(const RepoState& state, const std::string& file,
                                      size_t hex_length);
absl::Status WriteRefMapFile(const RepoState& state, const std::string& file, const RefMap& refs);

// Small files of Lazaret's own in the state directory (never mounted into
// the sandbox): one entry per line.
absl::StatusOr<std::vector<std::string>> ReadStateLines(const RepoState& state,
                                                        const std::string& name);
absl::Status WriteStateLines(const RepoState& state, const std::string& name,
                             const std::vector<std::string>& lines);

// The session's own branch below refs/heads/lazaret/ ("agent-alpha"), as
// the last plan recorded it. Empty for state from before branches were
// recorded: then nothing is imported.
absl::StatusOr<std::string> ReadOwnBranch(const RepoState& state);

// An exclusive lock on one repository's state, held while sweeping,
// importing or syncing, so the periodic WriteBack, the final one and
// `lazaret clean` never interleave.
class StateLock {
 public:
  static absl::StatusOr<StateLock> Acquire(const RepoState& state);

 private:
  explicit StateLock(fs::FileLock lock) : lock_(std::move(lock)) {}
  fs::FileLock lock_;
};

// The session's StateLease on `state`; refused while another session of
// `profile` holds it.
absl::StatusOr<std::shared_ptr<StateLease>> AcquireLease(const RepoState& state,
                                                         const CheckedRepo& repo,
                                                         const std::string& profile);

// S/info/alternates must say exactly "the shadow's objects". Anything else
// the sandbox put there is removed (and reported) and ours written again. It
// only matters inside: host git never reads S.
absl::Status EnsureSandboxAlternates(const RepoState& state, std::vector<std::string>* removed);

// The host repository a state directory belongs to, as PrepareRepoState
// recorded it.
absl::StatusOr<WriteBackTarget> ReadRecord(const std::string& repo_state_dir);

// Creates <state_dir>/<key>/ and what is in it, and records which host
// repository it belongs to.
absl::StatusOr<RepoState> PrepareRepoState(const std::string& state_dir, const CheckedRepo& repo);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_STATE_H_
