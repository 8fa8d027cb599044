// The Git Shadow: how a sandbox gets a working git on the developer's
// repository without any way to run code on the host through it or to move
// the developer's refs, index or objects. Runs in the `lazaret` CLI on the
// host, as the developer, before a sandbox starts (PlanGitShadow, here),
// while it runs and after it ends (WriteBack, sync.h), and from `lazaret
// clean` (WriteBackAll, sync.h). The host repository is trusted (it is the
// developer's); everything the sandbox can write - the per-profile object
// store, agent refs and reflogs under the state directory - is not: it is
// swept and validated before host git sees any of it, and host git only
// ever reads it through `git fetch` with fsck from a private repository
// Lazaret builds. docs/git-shadow.md explains each mount and why.
//
// The parts: inspect.h (finding and checking the host repository), state.h
// (the state directory and its locks), sync.h (state and host in step),
// import.h (importing what the agent committed), refs.h (ref names and
// object ids), git.h (running host git), tree.h (walking and copying what
// the sandbox wrote), sandbox_paths.h (the fixed paths inside).
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_PLAN_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_PLAN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/sessiond/gitshadow/sandbox_paths.h"
#include "services/sessiond/gitshadow/state.h"
#include "services/podman/mount_spec.h"

namespace lazaret::cli::gitshadow {

struct GitShadowRequest {
  std::string workspace_dir;   // the directory the developer asked for
  std::string profile;         // profile name; names the default agent branch
  std::string state_dir;       // <profile_dir>/git, owned by Lazaret (created 0700)
  std::string branch;          // --branch NAME, optional
  bool worktree_mode = false;  // --worktree
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

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_PLAN_H_
