// Importing what the agent committed: the session's own branch and the
// objects it needs, from the sandbox-written state into the host
// repository. Runs in the `lazaret` CLI on the host, as the developer,
// while a session runs, at its end and from `lazaret clean` (sync.h's
// WriteBack), and before the next session of the profile starts (plan.h).
// Trusts nothing below the state directory's objects/, refs/, logs/ and
// session/: every entry is swept (tree.h) before anything is read, the one
// ref a session may move is read by its path and must hold exactly one
// object id, pack indexes come from `git index-pack`, never from the
// sandbox, and host git reads the objects only through `git fetch` with
// fsck from R, a private repository only Lazaret writes. Every step is
// bounded (files looked at, lines reported, an indexing time budget, a
// backoff on repeating a failed import).
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_IMPORT_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_IMPORT_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/sessiond/gitshadow/refs.h"
#include "services/sessiond/gitshadow/state.h"
#include "services/sessiond/gitshadow/tree.h"

namespace lazaret::cli::gitshadow {

// What one WriteBack did.
struct WriteBackReport {
  std::vector<std::string> removed;    // swept entries ("objects/ab/x: symlink, removed")
  std::vector<std::string> rejected;   // refs and packs not imported, and why
  std::vector<std::string> imported;   // "lazaret/x <old> -> <new>"
  std::vector<std::string> conflicts;  // refs the host also moved; imported under another name
  bool fetched = false;                // host git fetch ran
  // The same import failed before and nothing changed since: no fetch was
  // tried (import_status repeats the last failure).
  bool backed_off = false;
  MirrorStats mirror;
  // Why the import failed (fetch refused, limits exceeded); the sweep above
  // happened regardless.
  absl::Status import_status;
};

// Bounds on repeating a failed import (docs/git-shadow.md, "Write-back
// bounds"): after the n-th failure of the same import (same refs and object
// ids, no object file changed) the next fetch waits
// ImportBackoffSeconds(n) - 2 s doubling up to 5 min.
inline constexpr int64_t kFirstBackoffSeconds = 2;
inline constexpr int64_t kMaxBackoffSeconds = 300;
// The final write-back of a session retries an import in backoff, unless it
// already failed this often.
inline constexpr int64_t kFinalRetryLimit = 3;
int64_t ImportBackoffSeconds(int64_t failures);

struct WriteBackOptions {
  // The session's last write-back (teardown, `lazaret clean`): an import in
  // backoff is retried once more, within the limit above.
  bool final_attempt = false;
  // Time all `git index-pack` runs of one write-back may take together
  // (each also has its own deadline); what is left is indexed next time.
  std::chrono::milliseconds index_budget = std::chrono::seconds(60);
};

struct ImportOutcome {
  // Agent-moved refs still only in the sandbox state, name -> object id.
  RefMap unimported;
};

// Sweep, validate, decide and fetch: sweeps what the sandbox wrote, reads
// the session's own branch (the only ref it may move; every other ref made
// or moved inside is reported in `rejected`), decides against the host's
// value and the last agreed base, copies the sandbox's object files into R,
// has `git index-pack` index its packs and lets host git fetch from R.
// Failures of the import itself (fetch refused, limits exceeded, the
// indexing budget spent) go to report->import_status; an error is returned
// when the sweep or Lazaret's state files failed, or host git could not list
// its refs. The caller holds the StateLock.
absl::StatusOr<ImportOutcome> ImportLocked(const WriteBackTarget& target, const RepoState& state,
                                           const WriteBackOptions& options,
                                           WriteBackReport* report);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_IMPORT_H_
