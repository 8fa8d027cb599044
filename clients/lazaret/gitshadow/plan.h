// The Git Shadow: how a sandbox gets a working git on the developer's
// repository without any way to run code on the host through it or to move
// the developer's refs, index or objects. Runs in the `lazaret` CLI on the
// host, as the developer, before a sandbox starts (PlanGitShadow), while it
// runs and after it ends (WriteBack), and from `lazaret clean`
// (WriteBackAll). The host repository is trusted (it is the developer's);
// everything the sandbox can write - the per-profile object store, agent
// refs and reflogs under the state directory - is not: it is swept and
// validated before host git sees any of it, and host git only ever reads it
// through `git fetch` with fsck from a private repository Lazaret builds.
// docs/git-shadow.md explains each mount and why.
#ifndef LAZARET_CLIENTS_LAZARET_GITSHADOW_PLAN_H_
#define LAZARET_CLIENTS_LAZARET_GITSHADOW_PLAN_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clients/lazaret/gitshadow/tree.h"
#include "clients/lazaret/mount_spec.h"

namespace lazaret::cli::gitshadow {

// Fixed paths inside the sandbox.
inline constexpr char kSandboxWorkspace[] = "/workspace";
// The host's git common directory, read-only.
inline constexpr char kSandboxGitShadow[] = "/run/lazaret/git";
// A read-write directory of Lazaret's state for this repository, holding
// the copy of the host index the init program copies into the git directory,
// and the packed-refs file the git directory's packed-refs links to.
inline constexpr char kSandboxGitSession[] = "/run/lazaret/git-session";
inline constexpr char kSandboxGitIndex[] = "/run/lazaret/git-session/index";
inline constexpr char kSandboxGitPackedRefs[] = "/run/lazaret/git-session/packed-refs";
// Where the git directory is built when the host workspace is a linked
// worktree (its .git is a file, so no tmpfs can be mounted on it): a
// read-only file "gitdir: /run/lazaret/git-dir" is bound over /workspace/.git.
inline constexpr char kSandboxLinkedGitDir[] = "/run/lazaret/git-dir";
// Where the runner binds lazaret-sandbox-init (read-only) and runs it as the
// container's entrypoint: `<kSandboxInitPath> <plan.init_args> -- CMD...`.
inline constexpr char kSandboxInitPath[] = "/run/lazaret/bin/lazaret-sandbox-init";

struct GitShadowRequest {
  std::string workspace_dir;   // the directory the developer asked for
  std::string profile;         // profile name; names the default agent branch
  std::string state_dir;       // <profile_dir>/git, owned by Lazaret (created 0700)
  std::string branch;          // --branch NAME, optional
  bool worktree_mode = false;  // --worktree
};

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
  explicit StateLease(int fd) : fd_(fd) {}
  ~StateLease();
  StateLease(const StateLease&) = delete;
  StateLease& operator=(const StateLease&) = delete;

 private:
  int fd_;
};

struct GitShadowPlan {
  // False when the workspace is in no repository, or in a subdirectory of
  // one (see notices): the sandbox then runs without a Git Shadow.
  bool has_repo = false;
  // The host directory to bind read-write at /workspace. The request's
  // directory, or the agent worktree in worktree mode.
  std::string workspace_host_dir;
  // In mount order, after /workspace itself.
  std::vector<Mount> mounts;
  std::vector<EnvSetting> env;
  // Flags for lazaret-sandbox-init, before "--". Empty without a repo.
  std::vector<std::string> init_args;
  std::string agent_branch;  // "lazaret/agent-<profile>"
  // Lines for the developer (subdirectory workspace, diverged agent branch,
  // unborn HEAD, refs a leftover import could not bring back, ...).
  std::vector<std::string> notices;
  WriteBackTarget write_back;         // set when has_repo
  std::shared_ptr<StateLease> lease;  // set when has_repo; keep the plan for the session
};

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

// Inspects the workspace's repository, creates the state directories, the
// agent branch (from the host HEAD commit when missing; fast-forwarded to it
// when it is an ancestor) and the refs/heads/lazaret mount point in the host
// .git, imports anything a previous session left unimported, and returns the
// mounts, environment and init flags. The agent branch is the only ref the
// session may move: every other refs/heads/lazaret/* ref is bound read-only
// inside. Refuses bare repositories, repos with alternates, a branch named
// `lazaret`, non-absorbed submodules and agent branch names git would not
// accept, each with a message saying what to do.
absl::StatusOr<GitShadowPlan> PlanGitShadow(const GitShadowRequest& request);

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

#endif  // LAZARET_CLIENTS_LAZARET_GITSHADOW_PLAN_H_
