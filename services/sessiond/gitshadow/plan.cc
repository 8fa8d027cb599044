#include "services/sessiond/gitshadow/plan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"
#include "services/sessiond/gitshadow/git.h"
#include "services/sessiond/gitshadow/import.h"
#include "services/sessiond/gitshadow/inspect.h"
#include "services/sessiond/gitshadow/refs.h"
#include "services/sessiond/gitshadow/sync.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::gitshadow {

using fs::DirFd;

namespace {

// Creates the agent branch at the host HEAD commit when missing, or
// fast-forwards it there when it is an ancestor (so, inside, `git status`
// matches the developer's view). Never moves it otherwise.
absl::Status EnsureAgentBranch(const CheckedRepo& repo, const RepoState& state,
                               const CheckedAgentBranch& branch, bool fast_forward, RefMap* host,
                               std::vector<std::string>* notices) {
  LAZ_ASSIGN_OR_RETURN(std::optional<std::string> head, HeadCommit(repo));
  const std::string rel = branch.relative();
  const std::string git_dir = absl::StrCat("--git-dir=", repo.common_dir);
  auto current = host->find(rel);
  if (current == host->end()) {
    if (!head) {
      notices->push_back(absl::StrCat("HEAD has no commit yet; the agent's first commit creates ",
                                      branch.short_name()));
      return absl::OkStatus();
    }
    LAZ_RETURN_IF_ERROR(RunGit(repo.common_dir,
                               {git_dir, "update-ref", "-m", "lazaret: agent branch from HEAD",
                                branch.refname(), *head, std::string(repo.hex_length, '0')},
                               kGitQueryTimeout)
                            .status());
    (*host)[rel] = *head;
  } else if (fast_forward && head && current->second != *head) {
    LAZ_ASSIGN_OR_RETURN(
        GitResult ancestor,
        RunGitRaw(repo.common_dir, {git_dir, "merge-base", "--is-ancestor", current->second, *head},
                  kGitImportTimeout));
    if (ancestor.exit_code == 0) {
      LAZ_RETURN_IF_ERROR(RunGit(repo.common_dir,
                                 {git_dir, "update-ref", "-m", "lazaret: fast-forward to HEAD",
                                  branch.refname(), *head, current->second},
                                 kGitQueryTimeout)
                              .status());
      current->second = *head;
    } else {
      notices->push_back(
          absl::StrCat(branch.short_name(),
                       " has commits your HEAD does not have; inside, `git status` "
                       "compares your working tree with it. Review with `git log HEAD..",
                       branch.short_name(), "` and merge, or reset it to start fresh."));
      return absl::OkStatus();
    }
  } else {
    return absl::OkStatus();
  }
  LAZ_RETURN_IF_ERROR(WriteRefFile(state.refs(), rel, (*host)[rel]));
  LAZ_ASSIGN_OR_RETURN(RefMap base, ReadRefMapFile(state, "base", repo.hex_length));
  base[rel] = (*host)[rel];
  return WriteRefMapFile(state, "base", base);
}

// The mount points refs/heads/lazaret and logs/refs/heads/lazaret must
// exist in the host .git: they are inside read-only binds, where the
// container runtime cannot create them. These empty directories are the
// only thing Lazaret adds to the host .git before a session.
absl::Status EnsureHostMountPoints(const CheckedRepo& repo) {
  std::vector<std::string> dirs = {repo.common_dir + "/refs/heads/lazaret"};
  if (IsDirectoryPath(repo.common_dir + "/logs/refs")) {
    dirs.push_back(repo.common_dir + "/logs/refs/heads");
    dirs.push_back(repo.common_dir + "/logs/refs/heads/lazaret");
  }
  for (const auto& d : dirs) {
    if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating ", d), errno);
    }
    if (!IsDirectoryPath(d)) {
      return absl::FailedPreconditionError(
          absl::StrCat(d, " is not a directory; Lazaret needs it as the agent ref namespace"));
    }
  }
  return absl::OkStatus();
}

// Gives what host root owns below `dir` (itself included) to uid/gid
// (static_cast<uid_t>(-1) leaves that id), never following a symlink.
absl::Status GiveRootOwnedTree(const DirFd& dir, int depth, uid_t uid, gid_t gid) {
  if (depth > 64) return absl::FailedPreconditionError("ref directories nested too deeply");
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(dir));
  for (const std::string& name : names) {
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const uid_t to_uid = st.st_uid == 0 ? uid : static_cast<uid_t>(-1);
    const gid_t to_gid = st.st_gid == 0 ? gid : static_cast<gid_t>(-1);
    if ((to_uid != static_cast<uid_t>(-1) || to_gid != static_cast<gid_t>(-1)) &&
        fchownat(dir.get(), name.c_str(), to_uid, to_gid, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoStatus(absl::StrCat("giving ", name, " to the repository's owner"), errno);
    }
    if (S_ISDIR(st.st_mode)) {
      LAZ_ASSIGN_OR_RETURN(DirFd child, dir.OpenChild(name));
      LAZ_RETURN_IF_ERROR(GiveRootOwnedTree(child, depth + 1, uid, gid));
    }
  }
  return absl::OkStatus();
}

// Rootful, host git ran as root above (EnsureAgentBranch) and Lazaret made
// the mount points: the agent branch's ref, its reflog and their
// directories would stay host root's in the developer's .git, where the
// developer's git could not move or delete them. They get the owner of the
// common dir, as everything the session writes there does (the workspace
// sweep, docs/operations.md "Rootful file ownership"). No sandbox runs yet,
// so nothing else writes there.
absl::Status GiveAgentRefsToRepoOwner(const CheckedRepo& repo) {
  if (geteuid() != 0) return absl::OkStatus();
  struct stat owner {};
  if (lstat(repo.common_dir.c_str(), &owner) != 0) {
    return ErrnoStatus(absl::StrCat("inspecting ", repo.common_dir), errno);
  }
  const uid_t uid = owner.st_uid != 0 ? owner.st_uid : static_cast<uid_t>(-1);
  const gid_t gid = owner.st_gid != 0 ? owner.st_gid : static_cast<gid_t>(-1);
  if (uid == static_cast<uid_t>(-1) && gid == static_cast<gid_t>(-1)) return absl::OkStatus();
  for (const char* parent : {"refs/heads", "logs/refs/heads"}) {
    const std::string path = absl::StrCat(repo.common_dir, "/", parent);
    if (!IsDirectoryPath(path + "/lazaret")) continue;
    LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(path));
    struct stat st {};
    if (fstat(dir.get(), &st) == 0 && (st.st_uid == 0 || st.st_gid == 0) &&
        fchown(dir.get(), st.st_uid == 0 ? uid : static_cast<uid_t>(-1),
               st.st_gid == 0 ? gid : static_cast<gid_t>(-1)) != 0) {
      return ErrnoStatus(absl::StrCat("giving ", path, " to the repository's owner"), errno);
    }
    LAZ_ASSIGN_OR_RETURN(DirFd lazaret, dir.OpenChild("lazaret"));
    if (fstat(lazaret.get(), &st) == 0 && (st.st_uid == 0 || st.st_gid == 0) &&
        fchown(lazaret.get(), st.st_uid == 0 ? uid : static_cast<uid_t>(-1),
               st.st_gid == 0 ? gid : static_cast<gid_t>(-1)) != 0) {
      return ErrnoStatus(absl::StrCat("giving ", path, "/lazaret to the repository's owner"),
                         errno);
    }
    LAZ_RETURN_IF_ERROR(GiveRootOwnedTree(lazaret, 0, uid, gid));
  }
  return absl::OkStatus();
}

// The session directory the sandbox sees read-write at kSandboxGitSession:
//  - packed-refs: every host ref (packed and loose) at session start. The
//    git directory's packed-refs links here rather than into the read-only
//    shadow because git locks packed-refs (resolving the symlink) for every
//    ref deletion - which commit, merge, rebase and `branch -d` all do - and
//    a lock next to a read-only target fails. Loose refs stay live through
//    the read-only refs bind and win over this snapshot; including the
//    loose values means a ref the host packs mid-session does not vanish.
//  - index: a copy of the work tree's index, which the init program copies
//    into the git directory.
// Returns whether there is an index.
absl::StatusOr<bool> WriteSessionFiles(const CheckedRepo& repo, const CheckedRepo& view,
                                       const RepoState& state) {
  LAZ_ASSIGN_OR_RETURN(std::string refs,
                       RunGit(repo.common_dir,
                              {absl::StrCat("--git-dir=", repo.common_dir), "for-each-ref",
                               "--format=%(objectname) %(refname)"},
                              kGitQueryTimeout));
  RefMap sorted;  // bytewise order, as the "sorted" trait requires
  for (const auto& line : Lines(refs)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || !IsObjectId(line.substr(0, space), repo.hex_length)) continue;
    sorted[line.substr(space + 1)] = line.substr(0, space);
  }
  std::string packed = "# pack-refs with: sorted \n";
  for (const auto& [name, oid] : sorted) absl::StrAppend(&packed, oid, " ", name, "\n");
  LAZ_ASSIGN_OR_RETURN(DirFd session, DirFd::Open(state.session()));
  LAZ_RETURN_IF_ERROR(fs::RemoveContents(session));
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(session, "packed-refs", packed));
  if (!IsRegularFilePath(view.index)) return false;
  LAZ_ASSIGN_OR_RETURN(DirFd index_dir, DirFd::Open(vocab::Dirname(view.index)));
  LAZ_ASSIGN_OR_RETURN(std::string index,
                       fs::ReadRegularFileAt(index_dir, vocab::Basename(view.index), 4ull << 30));
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(session, "index", index));
  return true;
}

// The other refs below lazaret/ exactly as the session's packed-refs (just
// written) shows them, so ImportLocked can tell an edit of that file from
// the snapshot.
absl::Status RecordVisibleRefs(const RepoState& state, const CheckedAgentBranch& branch,
                               size_t hex_length) {
  LAZ_ASSIGN_OR_RETURN(DirFd session, DirFd::Open(state.session()));
  LAZ_ASSIGN_OR_RETURN(std::string packed,
                       fs::ReadRegularFileAt(session, "packed-refs", kMaxPackedRefsBytes));
  RefMap visible = PackedAgentRefs(packed, hex_length);
  visible.erase(branch.relative());
  return WriteRefMapFile(state, "visible", visible);
}

// "a/b" -> "a%2Fb": one directory name per branch, injective.
std::string EncodeBranchDir(const std::string& short_name) {
  std::string out;
  for (char c : short_name) {
    if (c == '%') {
      out += "%25";
    } else if (c == '/') {
      out += "%2F";
    } else {
      out += c;
    }
  }
  return out;
}

// Worktree mode: a host `git worktree` of the agent branch, owned by Lazaret
// under the state directory, detached at the branch tip (so `git fetch`
// may move the branch while the worktree exists) and locked against
// `git worktree prune`.
absl::StatusOr<CheckedRepo> EnsureAgentWorktree(const CheckedRepo& repo, const RepoState& state,
                                                const CheckedAgentBranch& branch,
                                                const RefMap& host) {
  auto tip = host.find(branch.relative());
  if (tip == host.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--worktree needs a commit to start from, and ", branch.short_name(),
                     " does not exist yet (HEAD has no commit)"));
  }
  LAZ_RETURN_IF_ERROR(EnsureDirPaths(state.dir, {"worktrees"}));
  const std::string dir =
      absl::StrCat(state.worktrees(), "/", EncodeBranchDir(branch.short_name()));
  const std::string git_dir_arg = absl::StrCat("--git-dir=", repo.common_dir);
  if (!PathExists(dir)) {
    LAZ_RETURN_IF_ERROR(
        RunGit(repo.top,
               {git_dir_arg, "worktree", "add", "--quiet", "--detach", "--lock", dir, tip->second},
               kGitCheckoutTimeout)
            .status());
  }
  LAZ_ASSIGN_OR_RETURN(Inspection wt, InspectRepo(dir));
  if (wt.kind != RepoKind::kRepo || wt.repo.common_dir != repo.common_dir || !wt.repo.linked()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is not a worktree of ", repo.common_dir,
                     "; remove it (git worktree remove --force) and run again"));
  }
  LAZ_ASSIGN_OR_RETURN(std::optional<std::string> head, HeadCommit(wt.repo));
  if (head != tip->second) {
    // Bring the worktree's (detached) HEAD and index to the branch tip;
    // its files - the agent's work - stay as they are.
    LAZ_RETURN_IF_ERROR(
        RunGit(dir,
               {absl::StrCat("--git-dir=", wt.repo.git_dir), absl::StrCat("--work-tree=", dir),
                "reset", "--quiet", "--mixed", tip->second},
               kGitCheckoutTimeout)
            .status());
  }
  return wt.repo;
}

void AddBind(std::vector<Mount>* mounts, std::string host, std::string container, bool read_only) {
  mounts->push_back(BindMount{std::move(host), std::move(container), read_only, true});
}

std::vector<EnvSetting> SandboxGitEnv() {
  // Command-line scope config, no file: git in the sandbox trusts the
  // workspace and submodule directories (owned by the developer's uid, not
  // the sandbox's root), never packs refs or expires reflogs (those would
  // write host refs, which are read-only), and does not write info/refs into
  // the read-only shadow.
  const std::vector<std::pair<std::string, std::string>> config = {
      {"safe.directory", "*"},
      {"gc.packRefs", "false"},
      {"gc.reflogExpire", "never"},
      {"gc.reflogExpireUnreachable", "never"},
      {"repack.updateServerInfo", "false"},
  };
  std::vector<EnvSetting> env = {{"GIT_CONFIG_COUNT", absl::StrCat(config.size()), false}};
  for (size_t i = 0; i < config.size(); ++i) {
    env.push_back({absl::StrCat("GIT_CONFIG_KEY_", i), config[i].first, false});
    env.push_back({absl::StrCat("GIT_CONFIG_VALUE_", i), config[i].second, false});
  }
  return env;
}

}  // namespace

absl::StatusOr<GitShadowPlan> PlanGitShadow(const GitShadowRequest& request) {
  LAZ_ASSIGN_OR_RETURN(CheckedAgentBranch branch,
                       CheckAgentBranch(request.profile, request.branch));
  LAZ_ASSIGN_OR_RETURN(std::string workspace, CanonicalPath(request.workspace_dir));
  if (!IsDirectoryPath(workspace)) {
    return absl::InvalidArgumentError(absl::StrCat(workspace, " is not a directory"));
  }
  GitShadowPlan plan;
  plan.workspace_host_dir = workspace;
  plan.agent_branch = branch.short_name();
  LAZ_ASSIGN_OR_RETURN(Inspection inspection, InspectRepo(workspace));
  if (inspection.kind == RepoKind::kNone) {
    if (request.worktree_mode) {
      return absl::FailedPreconditionError(
          absl::StrCat("--worktree needs a git repository, and ", workspace, " is not in one"));
    }
    return plan;
  }
  if (inspection.kind == RepoKind::kSubdirectory) {
    const std::string message = absl::StrCat(
        workspace, " is inside the git repository ", inspection.repo.top,
        " but not at its top: only this directory is mounted and git does not work inside. Run "
        "lazaret from ",
        inspection.repo.top, " to get the Git Shadow.");
    if (request.worktree_mode) return absl::FailedPreconditionError(message);
    plan.notices.push_back(message);
    return plan;
  }
  const CheckedRepo& repo = inspection.repo;
  LAZ_RETURN_IF_ERROR(CheckRepoLayout(repo));
  LAZ_ASSIGN_OR_RETURN(RepoState state, PrepareRepoState(request.state_dir, repo));
  const WriteBackTarget target{repo.common_dir, state.dir, repo.object_format};

  LAZ_ASSIGN_OR_RETURN(plan.lease, AcquireLease(state, repo, request.profile));
  LAZ_ASSIGN_OR_RETURN(StateLock lock, StateLock::Acquire(state));
  // Anything a previous session left unimported goes to the host first.
  WriteBackReport leftovers;
  LAZ_ASSIGN_OR_RETURN(ImportOutcome outcome,
                       ImportLocked(target, state, WriteBackOptions{}, &leftovers));
  if (!leftovers.import_status.ok()) {
    plan.notices.push_back(absl::StrCat("a previous session's agent refs could not be imported (",
                                        leftovers.import_status.message(),
                                        "); they stay in the sandbox and are retried"));
  }
  for (const auto& c : leftovers.conflicts) plan.notices.push_back(c);
  LAZ_ASSIGN_OR_RETURN(RefMap host, HostAgentRefs(repo.common_dir));
  LAZ_ASSIGN_OR_RETURN(
      const std::vector<std::string> protected_entries,
      SyncStateFromHost(state, host, branch, outcome, repo.hex_length, &plan.notices));
  LAZ_RETURN_IF_ERROR(
      EnsureAgentBranch(repo, state, branch, !request.worktree_mode, &host, &plan.notices));
  LAZ_RETURN_IF_ERROR(EnsureHostMountPoints(repo));
  LAZ_RETURN_IF_ERROR(GiveAgentRefsToRepoOwner(repo));

  // The work tree the sandbox gets, and the git dir whose HEAD/index it uses.
  CheckedRepo view = repo;
  std::vector<Submodule> submodules;
  if (request.worktree_mode) {
    LAZ_ASSIGN_OR_RETURN(view, EnsureAgentWorktree(repo, state, branch, host));
    plan.workspace_host_dir = view.top;
  } else {
    LAZ_RETURN_IF_ERROR(FindSubmodules(repo, repo.git_dir, "", 0, &submodules));
  }

  // Mounts, in order. G is where the git directory is built.
  const std::string g =
      view.linked() ? kSandboxLinkedGitDir : absl::StrCat(kSandboxWorkspace, "/.git");
  std::vector<Mount>& m = plan.mounts;
  if (view.linked()) {
    LAZ_ASSIGN_OR_RETURN(DirFd state_dir, DirFd::Open(state.dir));
    LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(
        state_dir, "dotgit", absl::StrCat("gitdir: ", kSandboxLinkedGitDir, "\n")));
    AddBind(&m, state.dotgit(), absl::StrCat(kSandboxWorkspace, "/.git"), true);
  }
  LAZ_ASSIGN_OR_RETURN(const bool has_index, WriteSessionFiles(repo, view, state));
  LAZ_RETURN_IF_ERROR(RecordVisibleRefs(state, branch, repo.hex_length));
  m.push_back(TmpfsMount{g, "0755"});
  AddBind(&m, repo.common_dir, kSandboxGitShadow, true);
  AddBind(&m, state.session(), kSandboxGitSession, false);
  AddBind(&m, repo.common_dir + "/refs", g + "/refs", true);
  AddBind(&m, state.refs(), g + "/refs/heads/lazaret", false);
  // Other sessions' and the developer's refs below lazaret/: read-only over
  // themselves (SyncStateFromHost).
  for (const auto& entry : protected_entries) {
    AddBind(&m, absl::StrCat(state.refs(), "/", entry),
            absl::StrCat(g, "/refs/heads/lazaret/", entry), true);
  }
  if (IsDirectoryPath(repo.common_dir + "/logs/refs")) {
    AddBind(&m, repo.common_dir + "/logs/refs", g + "/logs/refs", true);
  }
  AddBind(&m, state.logs(), g + "/logs/refs/heads/lazaret", false);
  AddBind(&m, state.objects(), g + "/objects", false);
  if (!submodules.empty()) {
    AddBind(&m, repo.common_dir + "/modules", g + "/modules", true);
    for (const auto& s : submodules) {
      AddBind(&m, s.git_file, absl::StrCat(kSandboxWorkspace, "/", s.path, "/.git"), true);
    }
  }

  plan.env = SandboxGitEnv();
  plan.init_args = {absl::StrCat("--git-dir=", g), absl::StrCat("--git-shadow=", kSandboxGitShadow),
                    absl::StrCat("--git-head=", branch.refname())};
  if (has_index) plan.init_args.push_back(absl::StrCat("--git-index=", kSandboxGitIndex));
  plan.init_args.push_back(absl::StrCat("--git-packed-refs=", kSandboxGitPackedRefs));
  for (const char* link : {"config", "info", "shallow"}) {
    plan.init_args.push_back(absl::StrCat("--git-link=", link));
  }
  plan.has_repo = true;
  plan.write_back = target;
  return plan;
}

}  // namespace lazaret::cli::gitshadow
