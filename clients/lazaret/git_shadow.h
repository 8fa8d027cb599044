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
#ifndef LAZARET_CLIENTS_LAZARET_GIT_SHADOW_H_
#define LAZARET_CLIENTS_LAZARET_GIT_SHADOW_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clients/lazaret/git_shadow_fs.h"
#include "clients/lazaret/mount_spec.h"

namespace lazaret::cli {

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
// would share the session files and the agent ref namespace.
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
  WriteBackTarget write_back;  // set when has_repo
  std::shared_ptr<StateLease> lease;  // set when has_repo; keep the plan for the session
};

// What one WriteBack did.
struct WriteBackReport {
  std::vector<std::string> removed;    // swept entries ("objects/ab/x: symlink, removed")
  std::vector<std::string> rejected;   // agent refs not imported, and why
  std::vector<std::string> imported;   // "lazaret/x <old> -> <new>"
  std::vector<std::string> conflicts;  // refs the host also moved; imported under another name
  bool fetched = false;                // host git fetch ran
  MirrorStats mirror;
  // Why the import failed (fetch refused, limits exceeded); the sweep above
  // happened regardless.
  absl::Status import_status;
};

// Inspects the workspace's repository, creates the state directories, the
// agent branch (from the host HEAD commit when missing; fast-forwarded to it
// when it is an ancestor) and the refs/heads/lazaret mount point in the host
// .git, imports anything a previous session left unimported, and returns the
// mounts, environment and init flags. Refuses bare repositories, repos with
// alternates, a branch named `lazaret`, non-absorbed submodules and agent
// branch names git would not accept, each with a message saying what to do.
absl::StatusOr<GitShadowPlan> PlanGitShadow(const GitShadowRequest& request);

// Sweeps what the sandbox wrote (object store, agent refs, agent reflogs)
// and imports the agent's new or moved refs and their objects into the host
// repository with `git fetch` (hooks off, fsck on). Idempotent and cheap when
// nothing changed (one `git for-each-ref`). Never deletes a host ref.
absl::StatusOr<WriteBackReport> WriteBack(const WriteBackTarget& target);

// WriteBack for every repository recorded under `state_dir` (<profile_dir>/git):
// what `lazaret clean` runs for sessions that did not end cleanly. A missing
// state_dir is not an error.
absl::StatusOr<std::vector<std::pair<WriteBackTarget, WriteBackReport>>> WriteBackAll(
    const std::string& state_dir);

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_GIT_SHADOW_H_
