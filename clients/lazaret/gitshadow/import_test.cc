// Git Shadow tests with real git on temporary repositories. The agent is
// simulated by running git - as root - inside an emulation of the sandbox's
// mount layout: a private mount namespace (`unshare -m`) with a fresh root
// on a tmpfs, the workspace bound at /workspace and every mount of the plan
// made exactly as podman makes it (read-only binds remounted read-only;
// nested mount points must already exist inside read-only binds, as under
// podman), then lazaret-sandbox-init and the agent's commands chrooted into
// it. Everything is then checked on the host.
#include "clients/lazaret/gitshadow/import.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/gitshadow/plan.h"
#include "clients/lazaret/gitshadow/sync.h"
#include "tests/support/git_test_util.h"

namespace lazaret::cli::gitshadow {
namespace {

using test::HostGit;
using test::HostObjects;
using test::HostRepoState;
using test::PathExists;
using test::ShellQuote;
using test::TrimTrailing;

struct ShResult {
  int code = -1;
  std::string out;
};

// Runs a shell command (test scaffolding only) and returns its exit code and
// combined output.
ShResult Sh(const std::string& cmd) {
  ShResult r;
  FILE* f = popen(absl::StrCat("( ", cmd, " ) 2>&1").c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) r.out.append(buf, n);
  const int status = pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class GitShadowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-gs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    state_dir_ = base_ + "/profile/git";
  }
  void TearDown() override {
    if (!HasFailure()) (void)!system(absl::StrCat("rm -rf ", base_).c_str());
  }

  // A repository with two commits on main, a tag, a second branch, a fake
  // remote-tracking ref, a staged-but-uncommitted file and a hook.
  std::string MakeRepo(const std::string& name) {
    const std::string repo = absl::StrCat(base_, "/", name);
    Sh(absl::StrCat("mkdir -p ", ShellQuote(repo)));
    HostGit(repo, "init -q");
    HostGit(repo, "config user.name Dev");
    HostGit(repo, "config user.email dev@example.com");
    Sh(absl::StrCat("cd ", ShellQuote(repo), " && echo one > a.txt && echo keep > b.txt"));
    HostGit(repo, "add a.txt b.txt");
    HostGit(repo, "commit -q -m one");
    HostGit(repo, "tag v1");
    HostGit(repo, "branch feature");
    Sh(absl::StrCat("cd ", ShellQuote(repo), " && echo two >> a.txt"));
    HostGit(repo, "commit -q -am two");
    HostGit(repo, "update-ref refs/remotes/origin/main HEAD~1");
    Sh(absl::StrCat("cd ", ShellQuote(repo), " && echo staged > staged.txt"));
    HostGit(repo, "add staged.txt");
    Sh(absl::StrCat("cd ", ShellQuote(repo),
                    " && printf '#!/bin/sh\\ntouch /tmp/dev-hook-ran\\n' > .git/hooks/pre-commit"
                    " && chmod +x .git/hooks/pre-commit"));
    return repo;
  }

  absl::StatusOr<GitShadowPlan> Plan(const std::string& workspace, const std::string& branch = "",
                                     bool worktree = false, const std::string& profile = "test") {
    GitShadowRequest req;
    req.workspace_dir = workspace;
    req.profile = profile;
    // Each profile has a state directory of its own, as under lazaret run.
    req.state_dir = profile == "test" ? state_dir_ : absl::StrCat(base_, "/", profile, "/git");
    req.branch = branch;
    req.worktree_mode = worktree;
    return PlanGitShadow(req);
  }

  // Runs `script` with bash as the agent inside the emulated sandbox of
  // `plan`. Returns its exit code and output.
  ShResult RunInSandbox(const GitShadowPlan& plan, const std::string& script) {
    if (geteuid() != 0) return ShResult{-2, "not root"};
    const std::string root = absl::StrCat(base_, "/sandbox-root");
    std::string s = "set -e\n";
    absl::StrAppend(&s, "R=", ShellQuote(root), "\nmkdir -p \"$R\"\nmount -t tmpfs tmpfs \"$R\"\n",
                    "mkdir -p \"$R/usr\" \"$R/etc\" \"$R/dev\" \"$R/tmp\" \"$R/root\" "
                    "\"$R/proc\" \"$R/workspace\" \"$R/run/lazaret/bin\"\n",
                    "for d in bin lib lib64 sbin; do ln -s usr/$d \"$R/$d\"; done\n",
                    "mount --rbind /usr \"$R/usr\"; mount -o remount,ro,bind \"$R/usr\"\n",
                    "mount --rbind /etc \"$R/etc\"; mount -o remount,ro,bind \"$R/etc\"\n",
                    "mount --rbind /dev \"$R/dev\"\nmount -t proc proc \"$R/proc\"\n",
                    "mount -t tmpfs tmpfs \"$R/tmp\"\n", "mount --bind ",
                    ShellQuote(plan.workspace_host_dir), " \"$R/workspace\"\n");
    for (const Mount& m : plan.mounts) {
      if (const auto* t = std::get_if<TmpfsMount>(&m)) {
        absl::StrAppend(&s, "mkdir -p \"$R\"", ShellQuote(t->container),
                        "\nmount -t tmpfs -o mode=", t->mode, " tmpfs \"$R\"",
                        ShellQuote(t->container), "\n");
        continue;
      }
      const auto& b = std::get<BindMount>(m);
      const std::string target = absl::StrCat("\"$R\"", ShellQuote(b.container));
      absl::StrAppend(&s, "if [ -d ", ShellQuote(b.host), " ]; then mkdir -p ", target,
                      "; else mkdir -p \"$(dirname ", target, ")\"; [ -e ", target, " ] || touch ",
                      target, "; fi\n", "mount --bind ", ShellQuote(b.host), " ", target, "\n");
      if (b.read_only) absl::StrAppend(&s, "mount -o remount,ro,bind ", target, "\n");
    }
    absl::StrAppend(&s, "touch \"$R/run/lazaret/bin/lazaret-sandbox-init\"\n", "mount --bind ",
                    ShellQuote(LAZARET_SANDBOX_INIT_BIN),
                    " \"$R/run/lazaret/bin/lazaret-sandbox-init\"\n",
                    "cat > \"$R/tmp/agent.sh\" <<'LAZARET_AGENT_EOF'\n", script,
                    "\nLAZARET_AGENT_EOF\n", "set +e\n");
    std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                    "HOME=/root",
                                    "GIT_AUTHOR_NAME=Agent",
                                    "GIT_AUTHOR_EMAIL=agent@sandbox",
                                    "GIT_COMMITTER_NAME=Agent",
                                    "GIT_COMMITTER_EMAIL=agent@sandbox"};
    for (const auto& e : plan.env) env.push_back(absl::StrCat(e.name, "=", e.value));
    std::vector<std::string> init = {"/run/lazaret/bin/lazaret-sandbox-init"};
    init.insert(init.end(), plan.init_args.begin(), plan.init_args.end());
    std::vector<std::string> quoted;
    for (const auto& a : init) quoted.push_back(ShellQuote(a));
    for (const auto& e : env) quoted.push_back(ShellQuote(e));
    absl::StrAppend(
        &s, "chroot \"$R\" ", quoted[0], " ",
        absl::StrJoin(quoted.begin() + 1, quoted.begin() + 1 + plan.init_args.size(), " "),
        " -- /usr/bin/env -i ",
        absl::StrJoin(quoted.begin() + 1 + plan.init_args.size(), quoted.end(), " "),
        " /bin/bash -c 'cd /workspace && . /tmp/agent.sh'\n");
    const std::string setup = absl::StrCat(base_, "/sandbox.sh");
    std::ofstream(setup) << s;
    return Sh(absl::StrCat("unshare -m --propagation private bash ", ShellQuote(setup)));
  }

  bool CanEmulateSandbox() {
    return geteuid() == 0 && Sh("unshare -m --propagation private true").code == 0;
  }

  std::string base_;
  std::string state_dir_;
};

#define REQUIRE_SANDBOX_EMULATION()                                                            \
  if (!CanEmulateSandbox())                                                                    \
  GTEST_SKIP() << "needs root and unshare -m to emulate the sandbox's nested mounts (CI runs " \
                  "the tests as root)"

std::vector<std::string> Describe(const std::vector<Mount>& mounts) {
  std::vector<std::string> out;
  for (const Mount& m : mounts) {
    if (const auto* t = std::get_if<TmpfsMount>(&m)) {
      out.push_back(absl::StrCat("tmpfs ", t->container));
    } else {
      const auto& b = std::get<BindMount>(m);
      out.push_back(absl::StrCat(b.read_only ? "ro " : "rw ", b.host, " ", b.container));
    }
  }
  return out;
}

TEST_F(GitShadowTest, PlanForNormalRepoHasTheDocumentedMountsInOrder) {
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->has_repo);
  EXPECT_EQ(plan->workspace_host_dir, repo);
  EXPECT_EQ(plan->agent_branch, "lazaret/agent-test");
  const std::string s = plan->write_back.repo_state_dir;
  EXPECT_EQ(s.rfind(state_dir_ + "/", 0), 0u);
  const std::string g = repo + "/.git";
  EXPECT_EQ(Describe(plan->mounts), (std::vector<std::string>{
                                        "tmpfs /workspace/.git",
                                        "ro " + g + " /run/lazaret/git",
                                        "rw " + s + "/session /run/lazaret/git-session",
                                        "ro " + g + "/refs /workspace/.git/refs",
                                        "rw " + s + "/refs /workspace/.git/refs/heads/lazaret",
                                        "ro " + g + "/logs/refs /workspace/.git/logs/refs",
                                        "rw " + s + "/logs /workspace/.git/logs/refs/heads/lazaret",
                                        "rw " + s + "/objects /workspace/.git/objects",
                                    }));
  EXPECT_EQ(plan->init_args, (std::vector<std::string>{
                                 "--git-dir=/workspace/.git", "--git-shadow=/run/lazaret/git",
                                 "--git-head=refs/heads/lazaret/agent-test",
                                 "--git-index=/run/lazaret/git-session/index",
                                 "--git-packed-refs=/run/lazaret/git-session/packed-refs",
                                 "--git-link=config", "--git-link=info", "--git-link=shallow"}));
  // The session holds a copy of the index and every host ref, packed.
  EXPECT_EQ(Sh("cmp " + ShellQuote(g + "/index") + " " + ShellQuote(s + "/session/index")).code, 0);
  const std::string packed = Sh("cat " + ShellQuote(s + "/session/packed-refs")).out;
  for (const char* ref : {" refs/heads/main\n", " refs/heads/feature\n", " refs/tags/v1\n",
                          " refs/remotes/origin/main\n", " refs/heads/lazaret/agent-test\n"}) {
    EXPECT_NE(packed.find(ref), std::string::npos) << ref << packed;
  }
  ASSERT_FALSE(plan->env.empty());
  EXPECT_EQ(plan->env[0].name, "GIT_CONFIG_COUNT");
  // The agent branch exists on the host at HEAD, the mount points exist, S
  // borrows the shadow's objects.
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), HostGit(repo, "rev-parse HEAD"));
  EXPECT_TRUE(PathExists(g + "/refs/heads/lazaret"));
  EXPECT_TRUE(PathExists(g + "/logs/refs/heads/lazaret"));
  std::ifstream alt(s + "/objects/info/alternates");
  std::string line;
  std::getline(alt, line);
  EXPECT_EQ(line, "/run/lazaret/git/objects");
  EXPECT_EQ(TrimTrailing(Sh("cat " + ShellQuote(s + "/refs/agent-test")).out),
            HostGit(repo, "rev-parse HEAD"));
  struct stat st {};
  ASSERT_EQ(stat(state_dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(GitShadowTest, NoRepositoryMeansNoGitMounts) {
  const std::string dir = base_ + "/plain";
  Sh("mkdir -p " + ShellQuote(dir));
  auto plan = Plan(dir);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_repo);
  EXPECT_TRUE(plan->mounts.empty());
  EXPECT_TRUE(plan->init_args.empty());
  EXPECT_TRUE(plan->env.empty());
  EXPECT_EQ(plan->workspace_host_dir, dir);
  EXPECT_FALSE(Plan(dir, "", /*worktree=*/true).ok());
}

TEST_F(GitShadowTest, SubdirectoryOfARepoGetsNoShadowAndANotice) {
  const std::string repo = MakeRepo("repo");
  Sh("mkdir -p " + ShellQuote(repo + "/src"));
  auto plan = Plan(repo + "/src");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_repo);
  EXPECT_TRUE(plan->mounts.empty());
  EXPECT_EQ(plan->workspace_host_dir, repo + "/src") << "never widened to the repository top";
  ASSERT_EQ(plan->notices.size(), 1u);
  EXPECT_NE(plan->notices[0].find("not at its top"), std::string::npos);
  EXPECT_FALSE(PathExists(state_dir_)) << "nothing is created for a subdirectory";
}

TEST_F(GitShadowTest, RefusesBareRepository) {
  const std::string bare = base_ + "/bare.git";
  Sh("git init -q --bare " + ShellQuote(bare));
  auto plan = Plan(bare);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("bare"), std::string::npos) << plan.status();
  EXPECT_FALSE(Plan(bare + "/hooks").ok());
}

TEST_F(GitShadowTest, RefusesBranchNamedLazaret) {
  const std::string repo = MakeRepo("repo");
  HostGit(repo, "branch lazaret");
  auto plan = Plan(repo);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("branch named 'lazaret'"), std::string::npos)
      << plan.status();
}

TEST_F(GitShadowTest, RefusesRepositoryWithAlternates) {
  const std::string repo = MakeRepo("repo");
  HostGit(base_, "clone -q --shared repo shared");
  auto plan = Plan(base_ + "/shared");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("alternates"), std::string::npos) << plan.status();
}

TEST_F(GitShadowTest, BranchFlagPicksAnotherAgentBranch) {
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo, "fix-1");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->agent_branch, "lazaret/fix-1");
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/fix-1"), HostGit(repo, "rev-parse HEAD"));
  EXPECT_FALSE(Plan(repo, "bad..name").ok());
}

TEST_F(GitShadowTest, SecondSessionOnTheSameRepositoryIsRefusedWhileTheFirstRuns) {
  const std::string repo = MakeRepo("repo");
  auto first = Plan(repo);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Plan(repo);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("already using the repository"), std::string::npos)
      << second.status();
  first = absl::CancelledError("session ended");  // drops the first plan and its lease
  EXPECT_TRUE(Plan(repo).ok());
}

TEST_F(GitShadowTest, AgentBranchBehindHeadIsFastForwardedDivergedIsLeftAlone) {
  const std::string repo = MakeRepo("repo");
  ASSERT_TRUE(Plan(repo).ok());
  HostGit(repo, "commit -q -m three");  // commits the staged file
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), HostGit(repo, "rev-parse HEAD"));
  // Diverge: the agent branch gets a commit HEAD does not have.
  HostGit(repo, "checkout -q lazaret/agent-test");
  HostGit(repo, "commit -q --allow-empty -m agent-side");
  const std::string agent_tip = HostGit(repo, "rev-parse HEAD");
  HostGit(repo, "checkout -q main");
  HostGit(repo, "commit -q --allow-empty -m dev-side");
  plan = absl::CancelledError("session ended");  // releases its lease
  plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), agent_tip);
  ASSERT_FALSE(plan->notices.empty());
  EXPECT_NE(plan->notices.back().find("has commits your HEAD does not have"), std::string::npos);
}

TEST_F(GitShadowTest, LinkedWorktreeUsesCommonDirAndItsOwnIndex) {
  const std::string repo = MakeRepo("repo");
  HostGit(repo, "worktree add -q ../wt feature");
  const std::string wt = base_ + "/wt";
  auto plan = Plan(wt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->has_repo);
  const std::string s = plan->write_back.repo_state_dir;
  const std::string g = repo + "/.git";
  EXPECT_EQ(plan->write_back.host_common_dir, g);
  EXPECT_EQ(Describe(plan->mounts),
            (std::vector<std::string>{
                "ro " + s + "/dotgit /workspace/.git",
                "tmpfs /run/lazaret/git-dir",
                "ro " + g + " /run/lazaret/git",
                "rw " + s + "/session /run/lazaret/git-session",
                "ro " + g + "/refs /run/lazaret/git-dir/refs",
                "rw " + s + "/refs /run/lazaret/git-dir/refs/heads/lazaret",
                "ro " + g + "/logs/refs /run/lazaret/git-dir/logs/refs",
                "rw " + s + "/logs /run/lazaret/git-dir/logs/refs/heads/lazaret",
                "rw " + s + "/objects /run/lazaret/git-dir/objects",
            }));
  EXPECT_EQ(TrimTrailing(Sh("cat " + ShellQuote(s + "/dotgit")).out),
            "gitdir: /run/lazaret/git-dir");
  EXPECT_EQ(
      Sh("cmp " + ShellQuote(g + "/worktrees/wt/index") + " " + ShellQuote(s + "/session/index"))
          .code,
      0);
  // The agent branch starts at the worktree's HEAD (feature), not main's.
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), HostGit(repo, "rev-parse feature"));
}

TEST_F(GitShadowTest, SubmodulesAreReadOnlyAndNonAbsorbedOnesAreRefused) {
  const std::string lib = MakeRepo("lib");
  const std::string repo = MakeRepo("super");
  HostGit(repo, "submodule add -q ../lib vendor/lib");
  HostGit(repo, "commit -q -m sub");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<std::string> d = Describe(plan->mounts);
  EXPECT_EQ(d[d.size() - 2], "ro " + repo + "/.git/modules /workspace/.git/modules");
  EXPECT_EQ(d.back(), "ro " + repo + "/vendor/lib/.git /workspace/vendor/lib/.git");

  // A submodule with its .git directory inside the working tree is refused.
  const std::string old = MakeRepo("old");
  HostGit(base_, "clone -q lib old/inner");
  HostGit(old, "add inner");
  HostGit(old, "commit -q -m inner");
  auto refused = Plan(old);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("absorbgitdirs"), std::string::npos)
      << refused.status();
}

// ---- With the sandbox emulated: the agent really runs git. ----

TEST_F(GitShadowTest, AgentCanStatusDiffAddCommitBranchAndLogAndDeveloperSeesTheCommit) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string before = HostRepoState(repo);
  const std::set<std::string> objects_before = HostObjects(repo);
  const std::string dev_head = HostGit(repo, "rev-parse HEAD");

  ShResult r = RunInSandbox(*plan, R"SH(
set -e
git status --porcelain > /tmp/status
grep -q '^A  staged.txt' /tmp/status   # the developer's staged file shows as staged
test "$(git rev-parse --abbrev-ref HEAD)" = lazaret/agent-test
echo agent > agent.txt
git diff --quiet
git add agent.txt
git diff --cached --name-only | grep -q agent.txt
git commit -q -m 'agent work'
git branch lazaret/topic
git log --oneline -3
git branch -a
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("agent work"), std::string::npos);
  EXPECT_NE(r.out.find("feature"), std::string::npos);

  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(report->imported.size(), 1u);
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "agent work");
  // A branch the agent made beside its own stays inside.
  EXPECT_EQ(Sh("cd " + ShellQuote(repo) + " && git rev-parse -q --verify lazaret/topic").code, 1);
  EXPECT_NE(absl::StrJoin(report->rejected, "\n")
                .find("lazaret/topic: this session may move only lazaret/agent-test"),
            std::string::npos)
      << absl::StrJoin(report->rejected, "\n");
  EXPECT_EQ(HostGit(repo, "diff --name-only main lazaret/agent-test"), "agent.txt\nstaged.txt");
  // Every new object is in the host's own object database.
  HostGit(repo, "fsck --no-dangling --connectivity-only");
  EXPECT_EQ(HostGit(repo, "rev-parse HEAD"), dev_head);
  EXPECT_EQ(HostRepoState(repo), before) << "host config, hooks, HEAD, index and refs unchanged";
  const std::set<std::string> objects_after = HostObjects(repo);
  for (const auto& o : objects_before) EXPECT_EQ(objects_after.count(o), 1u) << o;

  // Nothing changed since: cheap, no fetch.
  auto again = WriteBack(plan->write_back);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->fetched);
  EXPECT_TRUE(again->imported.empty());
}

TEST_F(GitShadowTest, FreshCloneShowsAllBranchesAndTagsInside) {
  REQUIRE_SANDBOX_EMULATION();
  MakeRepo("origin");
  HostGit(base_, "clone -q origin clone");
  const std::string clone = base_ + "/clone";
  ASSERT_TRUE(PathExists(clone + "/.git/packed-refs"));
  auto plan = Plan(clone);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, "git branch -a; git tag; git status --short | wc -l");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("remotes/origin/feature"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("remotes/origin/main"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v1"), std::string::npos) << r.out;
}

TEST_F(GitShadowTest, WritesOutsideTheAgentNamespaceFailReadOnly) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string before = HostRepoState(repo);
  ShResult r = RunInSandbox(*plan, R"SH(
for cmd in "git branch evil" "git tag evil-tag" "git config core.pager evil" \
           "git remote add x /tmp" "git update-ref refs/heads/main HEAD~1" \
           "git update-ref -d refs/heads/feature" "git update-ref refs/remotes/origin/main HEAD" \
           "git checkout -q -b evil2"; do
  if $cmd >/tmp/out 2>&1; then echo "ALLOWED: $cmd"; cat /tmp/out; fi
  grep -q 'Read-only file system' /tmp/out || { echo "NOT EROFS: $cmd"; cat /tmp/out; }
done
echo x >> .git/config 2>/dev/null && echo "ALLOWED: append config"
echo change >> a.txt
git stash >/dev/null 2>&1 && echo "ALLOWED: stash"
echo done
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("ALLOWED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("NOT EROFS"), std::string::npos) << r.out;
  ASSERT_TRUE(WriteBack(plan->write_back).ok());
  EXPECT_EQ(HostRepoState(repo), before);
}

TEST_F(GitShadowTest, HookAndConfigPlantedInsideNeverRunOnHost) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string hooks_and_config =
      "cd " + ShellQuote(repo) + "/.git && sha256sum config hooks/* && ls -l hooks";
  const std::string hooks_and_config_before = Sh(hooks_and_config).out;
  const std::string marker = base_ + "/pwned";
  ShResult r = RunInSandbox(*plan, absl::StrCat(R"SH(
set -e
for h in pre-commit post-commit post-checkout pre-push reference-transaction fsmonitor-watchman; do
  printf '#!/bin/sh\ntouch )SH",
                                                marker, R"SH(\n' > .git/hooks/$h
  chmod +x .git/hooks/$h
done
rm .git/config
cat > .git/config <<EOF
[core]
  repositoryformatversion = 0
  bare = false
  pager = touch )SH",
                                                marker, R"SH(
  fsmonitor = touch )SH",
                                                marker, R"SH(
  hooksPath = /workspace/evil-hooks
  sshCommand = touch )SH",
                                                marker, R"SH(
[diff]
  external = touch )SH",
                                                marker, R"SH(
[alias]
  status = !touch )SH",
                                                marker, R"SH(
[include]
  path = /workspace/evil.cfg
EOF
mkdir -p evil-hooks
cp .git/hooks/* evil-hooks/
printf '[core]\n  pager = touch %s\n' )SH",
                                                marker, R"SH( > evil.cfg
git commit -q --allow-empty -m 'with hooks' || true
echo ok
)SH"));
  ASSERT_EQ(r.code, 0) << r.out;
  // The hooks ran inside (they are harmless there); remove the evidence.
  Sh("rm -f " + ShellQuote(marker));
  ASSERT_TRUE(WriteBack(plan->write_back).ok());
  // The developer uses git normally on the host.
  Sh(absl::StrCat("cd ", ShellQuote(repo),
                  " && git status >/dev/null && git log -1 | cat >/dev/null && git diff "
                  "lazaret/agent-test >/dev/null && git -c user.name=D -c user.email=d@e commit -q "
                  "-m dev && git checkout -q feature && git checkout -q main"));
  EXPECT_FALSE(PathExists(marker)) << "agent code ran on the host";
  Sh("rm -f /tmp/dev-hook-ran");
  EXPECT_EQ(Sh(hooks_and_config).out, hooks_and_config_before);
  EXPECT_EQ(Sh("cd " + ShellQuote(repo) + " && ls .git/hooks | grep -v sample").out,
            "pre-commit\n");
}

TEST_F(GitShadowTest, HostConfigChangeIsVisibleInsideAtOnce) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // While the sandbox runs, the host replaces .git/config (git config
  // writes a new file and renames it over the old one) and then drops a
  // flag into the workspace.
  const std::string flag = repo + "/flag";
  Sh(absl::StrCat("( sleep 1; cd ", ShellQuote(repo),
                  " && git config lazaret.probe changed && touch ", ShellQuote(flag),
                  " ) >/dev/null 2>&1 &"));
  ShResult r = RunInSandbox(*plan, R"SH(
before=$(git config lazaret.probe || echo unset)
for i in $(seq 100); do [ -e /workspace/flag ] && break; sleep 0.1; done
echo "$before -> $(git config lazaret.probe)")SH");
  EXPECT_EQ(TrimTrailing(r.out), "unset -> changed") << r.out;
}

TEST_F(GitShadowTest, PlantedSymlinksFifosAndDevicesAreRemovedAndNeverFollowed) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string before = HostRepoState(repo);
  const std::string s = plan->write_back.repo_state_dir;
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
echo work > w.txt && git add w.txt && git commit -q -m work
O=.git/objects
mkdir -p $O/ab $O/pack
ln -s /etc/shadow $O/ab/cdef0123456789abcdef0123456789abcdef01
mkfifo $O/pack/pack-0123456789abcdef0123456789abcdef01234567.pack
touch $O/pack/pack-0123456789abcdef0123456789abcdef01234567.idx
mknod $O/ab/1111111111111111111111111111111111111111 c 1 3 || true
ln -s /run/lazaret/git/hooks $O/cd
ln -s /run/lazaret/git/refs/heads/main .git/refs/heads/lazaret/evil-link
mkfifo .git/refs/heads/lazaret/evil-fifo
ln -s /etc/passwd .git/logs/refs/heads/lazaret/evil-log
mkfifo .git/logs/refs/heads/lazaret/agent-test-fifo
echo ok
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  const std::string removed = absl::StrJoin(report->removed, "\n");
  for (const char* what : {"objects/ab/cdef0123456789abcdef0123456789abcdef01: symlink",
                           "objects/pack/pack-0123456789abcdef0123456789abcdef01234567.pack: FIFO",
                           "objects/cd: symlink", "refs/evil-link: symlink", "refs/evil-fifo: FIFO",
                           "logs/evil-log: symlink", "logs/agent-test-fifo: FIFO"}) {
    EXPECT_NE(removed.find(what), std::string::npos) << what << "\n" << removed;
  }
  EXPECT_FALSE(PathExists(s + "/objects/ab/cdef0123456789abcdef0123456789abcdef01"));
  EXPECT_FALSE(PathExists(s + "/refs/evil-link"));
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "work");
  EXPECT_EQ(HostRepoState(repo), before);
}

TEST_F(GitShadowTest, AlternatesPlantedInsideHaveNoEffectOnHost) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string before = HostRepoState(repo);
  // The agent builds a commit whose objects live only in a store outside S,
  // and points S's alternates (and http-alternates) at it.
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
git init -q --bare /workspace/evil.git
echo /workspace/evil.git/objects >> .git/objects/info/alternates
echo http://192.0.2.1/evil > .git/objects/info/http-alternates
blob=$(echo evil | GIT_DIR=/workspace/evil.git git hash-object -w --stdin)
tree=$(printf '100644 blob %s\tevil\n' $blob | GIT_DIR=/workspace/evil.git git mktree)
c=$(GIT_DIR=/workspace/evil.git git commit-tree -m evil $tree)
git update-ref refs/heads/lazaret/agent-test $c
git cat-file -e $c && echo visible-inside
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("visible-inside"), std::string::npos);
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->import_status.ok()) << "the objects are not in S; import must fail";
  const std::string removed = absl::StrJoin(report->removed, "\n");
  EXPECT_NE(removed.find("objects/info/http-alternates"), std::string::npos) << removed;
  EXPECT_NE(removed.find("objects/info/alternates: changed by the sandbox"), std::string::npos)
      << removed;
  EXPECT_FALSE(PathExists(repo + "/.git/objects/info/alternates"));
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), HostGit(repo, "rev-parse HEAD"));
  EXPECT_EQ(HostRepoState(repo), before);
  EXPECT_EQ(TrimTrailing(Sh("cat " + ShellQuote(plan->write_back.repo_state_dir +
                                                "/import/objects/info/alternates"))
                             .out),
            repo + "/.git/objects");
}

TEST_F(GitShadowTest, GcPruneRepackAndReflogExpireInsideKeepEveryHostObjectRefAndReflog) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");             // has a staged-only blob
  HostGit(repo, "commit-tree -m dangling HEAD^{tree}");  // an unreferenced commit
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string before = HostRepoState(repo);
  const std::set<std::string> objects_before = HostObjects(repo);
  ShResult r = RunInSandbox(*plan, R"SH(
echo x > x.txt && git add x.txt && git commit -q -m x
git gc --prune=now --aggressive; echo "gc=$?"
git prune --expire=now; echo "prune=$?"
git repack -a -d -f; echo "repack=$?"
git reflog expire --all --expire=now; echo "reflog=$?"
git pack-refs --all; echo "pack-refs=$?"
git log --oneline -1
)SH");
  EXPECT_NE(r.out.find("gc=0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("repack=0"), std::string::npos) << r.out;
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "x");
  EXPECT_EQ(HostRepoState(repo), before);
  const std::set<std::string> objects_after = HostObjects(repo);
  for (const auto& o : objects_before) EXPECT_EQ(objects_after.count(o), 1u) << o;
  EXPECT_EQ(HostGit(repo, "diff --cached --name-only"), "staged.txt");
}

TEST_F(GitShadowTest, PackIndexesAreRebuiltOnTheHostAndGarbagePacksRejected) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
echo p > p.txt && git add p.txt && git commit -q -m packed-commit
git repack -q -d
cd .git/objects/pack
idx=$(ls pack-*.idx)
head -c 100 /dev/urandom > $idx          # a lying index for a real pack
g=pack-0123456789abcdef0123456789abcdef01234567
head -c 5000 /dev/urandom > $g.pack     # a garbage pack with an index
cp $idx $g.idx
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "packed-commit");
  const std::string rejected = absl::StrJoin(report->rejected, "\n");
  EXPECT_NE(rejected.find("pack-0123456789abcdef0123456789abcdef01234567.pack: not a valid pack"),
            std::string::npos)
      << rejected;
  HostGit(repo, "fsck --no-dangling");
}

TEST_F(GitShadowTest, RemovingOrMovingGitInsideLeavesHostIntact) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string before = HostRepoState(repo);
  ShResult r = RunInSandbox(*plan, R"SH(
rm -rf /workspace/.git 2>/dev/null
mv /workspace/.git /workspace/git-moved 2>/dev/null && echo MOVED
rm -rf /workspace/.git/refs/heads/main 2>/dev/null
ls /workspace/.git
)SH");
  EXPECT_EQ(r.out.find("MOVED"), std::string::npos) << r.out;
  ASSERT_TRUE(WriteBack(plan->write_back).ok());
  EXPECT_EQ(HostRepoState(repo), before);
  EXPECT_EQ(HostGit(repo, "status --porcelain"), "A  staged.txt");
}

TEST_F(GitShadowTest, AgentPacksItsOwnRefWithoutErrorsAndItIsStillImported) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
git commit -q --allow-empty -m one 2>&1
# Packing the host's refs fails (read-only); its own goes to packed-refs.
git pack-refs --all 2>/dev/null || true
test ! -e .git/refs/heads/lazaret/agent-test
git log -1 --format=%s lazaret/agent-test
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("error"), std::string::npos) << r.out;
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "one")
      << "the branch only in the session's packed-refs is imported";
  r = RunInSandbox(*plan, "git commit -q --allow-empty -m two 2>&1");
  ASSERT_EQ(r.code, 0) << r.out;
  report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "two");
}

TEST_F(GitShadowTest, AgentRefsThatAreNotOneObjectIdAreRejected) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  const std::string tip = HostGit(repo, "rev-parse HEAD");
  for (const std::string& contents : std::vector<std::string>{
           "ref: refs/heads/main", "garbage", absl::StrCat(tip, "\n", tip), std::string(40, '0')}) {
    auto plan = Plan(repo);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ShResult r = RunInSandbox(*plan, absl::StrCat("printf '%s\\n' ", ShellQuote(contents),
                                                  " > .git/refs/heads/lazaret/agent-test"));
    ASSERT_EQ(r.code, 0) << r.out;
    auto report = WriteBack(plan->write_back);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_EQ(report->rejected.size(), 1u) << absl::StrJoin(report->rejected, "\n");
    EXPECT_NE(report->rejected[0].find("lazaret/agent-test: not exactly one object id"),
              std::string::npos)
        << report->rejected[0];
    EXPECT_FALSE(report->fetched);
    EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), tip) << contents;
  }
}

TEST_F(GitShadowTest, HostAndSandboxMovingTheSameBranchKeepsBoth) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r =
      RunInSandbox(*plan, "git commit -q --allow-empty -m agent-side && git rev-parse HEAD");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string agent_tip = TrimTrailing(r.out);
  HostGit(repo, "branch -f lazaret/agent-test feature");  // the developer moves it meanwhile
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->conflicts.size(), 1u);
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), HostGit(repo, "rev-parse feature"));
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test-sandbox-" + agent_tip.substr(0, 12)),
            agent_tip);
}

TEST_F(GitShadowTest, WorkLeftByACrashedSessionIsImportedAtTheNextPlan) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, "git commit -q --allow-empty -m unsaved && git rev-parse HEAD");
  ASSERT_EQ(r.code, 0) << r.out;
  // No WriteBack: the session "crashed". `lazaret clean` or the next run
  // brings it in.
  auto all = WriteBackAll(state_dir_);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), TrimTrailing(r.out));
  ShResult r2 =
      RunInSandbox(*plan, "git commit -q --allow-empty -m unsaved2 && git rev-parse HEAD");
  plan = absl::CancelledError("session ended");  // releases its lease
  ASSERT_TRUE(Plan(repo).ok());
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), TrimTrailing(r2.out));
}

TEST_F(GitShadowTest, LinkedWorktreeWorksInside) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  HostGit(repo, "worktree add -q ../wt feature");
  const std::string wt = base_ + "/wt";
  auto plan = Plan(wt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string before = HostRepoState(repo);
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
git status --short
git rev-parse --abbrev-ref HEAD
echo y > y.txt && git add y.txt && git commit -q -m in-worktree
echo 'gitdir: /tmp' > .git 2>/dev/null && echo REWROTE || true
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("lazaret/agent-test"), std::string::npos);
  EXPECT_EQ(r.out.find("REWROTE"), std::string::npos);
  ASSERT_TRUE(WriteBack(plan->write_back).ok());
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "in-worktree");
  EXPECT_EQ(HostRepoState(repo), before);
  EXPECT_EQ(HostGit(wt, "rev-parse --abbrev-ref HEAD"), "feature");
}

TEST_F(GitShadowTest, SubmodulesWorkReadOnlyInside) {
  REQUIRE_SANDBOX_EMULATION();
  MakeRepo("lib");
  const std::string repo = MakeRepo("super");
  HostGit(repo, "submodule add -q ../lib vendor/lib");
  HostGit(repo, "commit -q -m sub");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string before = HostRepoState(repo);
  const std::string sub_git_file = Sh("cat " + ShellQuote(repo + "/vendor/lib/.git")).out;
  ShResult r = RunInSandbox(*plan, R"SH(
git status --short && echo STATUS-OK
git -C vendor/lib log --oneline -1 && echo SUBLOG-OK
(cd vendor/lib && echo z > z && git add z 2>&1 && git commit -q -m z 2>&1) && echo SUBCOMMIT
echo 'gitdir: /workspace/evil' > vendor/lib/.git 2>/dev/null && echo REWROTE
git config -f .git/modules/vendor/lib/config core.fsmonitor evil 2>/dev/null && echo SUBCONFIG
true
)SH");
  EXPECT_NE(r.out.find("STATUS-OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SUBLOG-OK"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SUBCOMMIT"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("REWROTE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SUBCONFIG"), std::string::npos) << r.out;
  ASSERT_TRUE(WriteBack(plan->write_back).ok());
  EXPECT_EQ(HostRepoState(repo), before);
  EXPECT_EQ(Sh("cat " + ShellQuote(repo + "/vendor/lib/.git")).out, sub_git_file);
}

TEST_F(GitShadowTest, ShallowRepositoryWorksInside) {
  REQUIRE_SANDBOX_EMULATION();
  MakeRepo("origin");
  HostGit(base_, "clone -q --depth 1 file://" + base_ + "/origin shallow");
  const std::string repo = base_ + "/shallow";
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
test "$(git rev-parse --is-shallow-repository)" = true
git log --oneline | wc -l
git commit -q --allow-empty -m on-shallow
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "on-shallow");
}

TEST_F(GitShadowTest, WorktreeModeLeavesTheDevelopersTreeUntouched) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  const std::string before = HostRepoState(repo);
  const std::string files_before = Sh("cd " + ShellQuote(repo) + " && sha256sum *.txt").out;
  auto plan = Plan(repo, "", /*worktree=*/true);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(plan->workspace_host_dir, repo);
  EXPECT_EQ(plan->workspace_host_dir.rfind(state_dir_, 0), 0u);
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
test ! -e staged.txt   # the developer's uncommitted work is not here
git status --porcelain | wc -l
echo wt > a.txt && git commit -q -am in-agent-worktree
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(TrimTrailing(r.out), "0") << "a clean worktree of the agent branch";
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "in-agent-worktree");
  EXPECT_EQ(Sh("cd " + ShellQuote(repo) + " && sha256sum *.txt").out, files_before);
  // The next session's worktree catches up with the branch.
  plan = absl::CancelledError("session ended");  // releases its lease
  auto plan2 = Plan(repo, "", /*worktree=*/true);
  ASSERT_TRUE(plan2.ok()) << plan2.status();
  ShResult r2 = RunInSandbox(*plan2, "git status --porcelain | wc -l; git log -1 --format=%s");
  EXPECT_EQ(TrimTrailing(r2.out), "0\nin-agent-worktree") << r2.out;
  (void)before;
}

TEST_F(GitShadowTest, Sha256RepositoryWorks) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = base_ + "/sha256";
  Sh("mkdir -p " + ShellQuote(repo));
  HostGit(repo, "init -q --object-format=sha256");
  HostGit(repo, "commit -q --allow-empty -m root");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, "git commit -q --allow-empty -m agent256");
  ASSERT_EQ(r.code, 0) << r.out;
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "agent256");
}

TEST_F(GitShadowTest, OtherLazaretBranchesAreBoundReadOnlyOverThemselves) {
  const std::string repo = MakeRepo("repo");
  HostGit(repo,
          "branch lazaret/agent-beta && git branch lazaret/review/1 && git branch "
          "lazaret/odd,name");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string s = plan->write_back.repo_state_dir;
  const std::vector<std::string> mounts = Describe(plan->mounts);
  for (const char* entry : {"agent-beta", "review"}) {
    const std::string bind =
        absl::StrCat("ro ", s, "/refs/", entry, " /workspace/.git/refs/heads/lazaret/", entry);
    EXPECT_NE(std::find(mounts.begin(), mounts.end(), bind), mounts.end())
        << bind << "\n"
        << absl::StrJoin(mounts, "\n");
  }
  for (const auto& m : mounts) EXPECT_EQ(m.find(','), std::string::npos) << m;
  EXPECT_NE(absl::StrJoin(plan->notices, "\n").find("a name with a comma"), std::string::npos)
      << absl::StrJoin(plan->notices, "\n");
  EXPECT_EQ(TrimTrailing(Sh("cat " + ShellQuote(s + "/refs/review/1")).out),
            HostGit(repo, "rev-parse lazaret/review/1"));
}

// THREATS "a session moves a ref outside its own branch": every other ref
// below lazaret/ is visible inside and cannot be moved there; what the agent
// makes beside its branch, or edits in packed-refs, is dropped at import
// with a message; its own commit is imported.
TEST_F(GitShadowTest, SessionMovesOnlyItsOwnBranch) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  HostGit(repo, "branch lazaret/agent-beta HEAD~1");
  HostGit(repo, "branch lazaret/review feature");
  HostGit(repo, "branch lazaret/team/x feature");
  const std::string beta = HostGit(repo, "rev-parse lazaret/agent-beta");
  const std::string review = HostGit(repo, "rev-parse lazaret/review");
  const std::string team = HostGit(repo, "rev-parse lazaret/team/x");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, R"SH(
git branch --list 'lazaret/*'
for cmd in "git update-ref refs/heads/lazaret/agent-beta HEAD" \
           "git update-ref -d refs/heads/lazaret/review" \
           "git branch -f lazaret/review HEAD" \
           "git branch lazaret/team/y" \
           "git update-ref refs/heads/lazaret/team/x HEAD" \
           "rm -f .git/refs/heads/lazaret/agent-beta" \
           "mv .git/refs/heads/lazaret/review .git/refs/heads/lazaret/moved"; do
  $cmd >/dev/null 2>&1 && echo "ALLOWED: $cmd"
done
echo $(git rev-parse HEAD) > .git/refs/heads/lazaret/agent-beta 2>/dev/null && echo "ALLOWED: write"
test "$(git rev-parse lazaret/agent-beta)" = "$(git rev-parse HEAD~1)" || echo "MOVED INSIDE: beta"
git branch lazaret/made-inside && echo MADE
sed -i "s|^[0-9a-f]* refs/heads/lazaret/agent-beta$|$(git rev-parse HEAD) refs/heads/lazaret/agent-beta|" \
  /run/lazaret/git-session/packed-refs
git commit -q --allow-empty -m mine && echo COMMITTED
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* b : {"lazaret/agent-beta", "lazaret/review", "lazaret/team/x"}) {
    EXPECT_NE(r.out.find(b), std::string::npos) << "visible inside: " << b << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("ALLOWED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MOVED INSIDE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MADE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("COMMITTED"), std::string::npos) << r.out;

  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "mine");
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-beta"), beta);
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/review"), review);
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/team/x"), team);
  EXPECT_EQ(HostGit(repo, "for-each-ref --format='%(refname)' refs/heads/lazaret"),
            "refs/heads/lazaret/agent-beta\nrefs/heads/lazaret/agent-test\n"
            "refs/heads/lazaret/review\nrefs/heads/lazaret/team/x");
  const std::string rejected = absl::StrJoin(report->rejected, "\n");
  EXPECT_NE(rejected.find("lazaret/made-inside: this session may move only lazaret/agent-test"),
            std::string::npos)
      << rejected;
  EXPECT_NE(rejected.find("lazaret/agent-beta (packed): this session may move only"),
            std::string::npos)
      << rejected;
}

// Two profiles on one repository at the same time: each session moves its
// own branch, neither can move the other's, both import.
TEST_F(GitShadowTest, ConcurrentSessionsOfTwoProfilesNeverTouchEachOthersBranch) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto alpha = Plan(repo, "", false, "alpha");
  ASSERT_TRUE(alpha.ok()) << alpha.status();
  auto beta = Plan(repo, "", false, "beta");
  ASSERT_TRUE(beta.ok()) << beta.status() << " (sessions of other profiles run side by side)";
  const std::string start = HostGit(repo, "rev-parse HEAD");
  // beta started after alpha: alpha's branch is visible (read-only) to it;
  // alpha never saw beta's, and can only make one of that name inside.
  ShResult b = RunInSandbox(*beta, R"SH(
git commit -q --allow-empty -m beta-work
git update-ref refs/heads/lazaret/agent-alpha HEAD 2>/dev/null && echo ALLOWED
git rev-parse HEAD
)SH");
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(b.out.find("ALLOWED"), std::string::npos) << b.out;
  ShResult a = RunInSandbox(*alpha, R"SH(
git commit -q --allow-empty -m alpha-work
git update-ref refs/heads/lazaret/agent-beta HEAD && echo MADE-INSIDE
)SH");
  ASSERT_EQ(a.code, 0) << a.out;
  auto ra = WriteBack(alpha->write_back);
  auto rb = WriteBack(beta->write_back);
  ASSERT_TRUE(ra.ok()) << ra.status();
  ASSERT_TRUE(rb.ok()) << rb.status();
  EXPECT_TRUE(ra->import_status.ok()) << ra->import_status;
  EXPECT_TRUE(rb->import_status.ok()) << rb->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-alpha"), "alpha-work");
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-beta"), "beta-work");
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-alpha~1"), start);
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-beta~1"), start);
  EXPECT_NE(absl::StrJoin(ra->rejected, "\n")
                .find("lazaret/agent-beta: this session may move only "
                      "lazaret/agent-alpha"),
            std::string::npos)
      << absl::StrJoin(ra->rejected, "\n");
}

// A garbage pack is refused once: later write-backs neither copy nor index
// it again while it is unchanged, and the agent's commits still import.
TEST_F(GitShadowTest, RefusedPackIsNotCopiedOrIndexedAgain) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
git commit -q --allow-empty -m one
g=.git/objects/pack/pack-0123456789abcdef0123456789abcdef01234567
mkdir -p .git/objects/pack
head -c 3000000 /dev/urandom > $g.pack
head -c 1000 /dev/urandom > $g.idx
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  auto first = WriteBack(plan->write_back);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_NE(absl::StrJoin(first->rejected, "\n").find("not a valid pack"), std::string::npos);
  EXPECT_GE(first->mirror.bytes_copied, 3000000u);
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "one");
  for (const char* msg : {"two", "three"}) {
    r = RunInSandbox(*plan, absl::StrCat("git commit -q --allow-empty -m ", msg));
    ASSERT_EQ(r.code, 0) << r.out;
    auto next = WriteBack(plan->write_back);
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_TRUE(next->import_status.ok()) << next->import_status;
    EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), msg);
    EXPECT_TRUE(next->rejected.empty()) << absl::StrJoin(next->rejected, "\n");
    EXPECT_TRUE(next->mirror.packs_to_index.empty());
    EXPECT_LT(next->mirror.bytes_copied, 100000u) << "the refused pack was copied again";
  }
  // Rewritten, it is a new file and gets looked at again.
  r = RunInSandbox(*plan, R"SH(
head -c 2000 /dev/urandom > .git/objects/pack/pack-0123456789abcdef0123456789abcdef01234567.pack
git commit -q --allow-empty -m four
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  auto changed = WriteBack(plan->write_back);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_NE(absl::StrJoin(changed->rejected, "\n").find("not a valid pack"), std::string::npos);
}

// An import that cannot succeed (the branch names an object the sandbox
// does not have) is fetched once; later write-backs with nothing changed
// back off without running git fetch; a change in the object store, or the
// session's final write-back, tries again.
TEST_F(GitShadowTest, FailedImportIsNotRetriedUntilSomethingChangesOrBackoffEnds) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  const std::string tip = HostGit(repo, "rev-parse HEAD");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(
      *plan, "echo 1234567890123456789012345678901234567890 > .git/refs/heads/lazaret/agent-test");
  ASSERT_EQ(r.code, 0) << r.out;
  auto first = WriteBack(plan->write_back);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->fetched);
  EXPECT_FALSE(first->import_status.ok());
  for (int i = 0; i < 3; ++i) {
    auto again = WriteBack(plan->write_back);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_FALSE(again->fetched) << "the same failing import ran again";
    EXPECT_TRUE(again->backed_off);
    EXPECT_EQ(again->import_status.message(), first->import_status.message())
        << "the same problem is reported in the same words (one log line)";
  }
  WriteBackOptions final_attempt;
  final_attempt.final_attempt = true;
  auto last = WriteBack(plan->write_back, final_attempt);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->fetched) << "the session's last write-back tries once more";
  // Now it failed twice; a new object in the store is a change worth a try.
  r = RunInSandbox(*plan, "echo new | git hash-object -w --stdin >/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  auto after_change = WriteBack(plan->write_back);
  ASSERT_TRUE(after_change.ok()) << after_change.status();
  EXPECT_TRUE(after_change->fetched);
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-test"), tip);
  // And a real commit still imports.
  r = RunInSandbox(*plan, "git update-ref refs/heads/lazaret/agent-test " + tip +
                              " && git commit -q --allow-empty -m recovered");
  ASSERT_EQ(r.code, 0) << r.out;
  auto ok = WriteBack(plan->write_back);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(ok->import_status.ok()) << ok->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "recovered");
}

// Work the last session left unimported on its branch is never dropped by
// starting a session on another branch.
TEST_F(GitShadowTest, UnimportedWorkOnAnotherBranchBlocksASessionOnADifferentBranch) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // A value no import can bring over (no such object).
  ShResult r = RunInSandbox(
      *plan, "echo 1234567890123456789012345678901234567890 > .git/refs/heads/lazaret/agent-test");
  ASSERT_EQ(r.code, 0) << r.out;
  plan = absl::CancelledError("session ended");  // releases its lease
  auto other = Plan(repo, "fix-1");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("left work on lazaret/agent-test"), std::string::npos)
      << other.status();
  EXPECT_NE(other.status().message().find("--branch agent-test"), std::string::npos)
      << other.status();
  other = absl::CancelledError("refused");
  // The same branch continues it; the work is still there.
  auto same = Plan(repo);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(TrimTrailing(
                Sh("cat " + ShellQuote(same->write_back.repo_state_dir + "/refs/agent-test")).out),
            "1234567890123456789012345678901234567890");
}

// Packs share one indexing budget per write-back: when it runs out, the
// import waits for the next write-back instead of running on, and nothing
// is remembered as refused for having been cut short.
TEST_F(GitShadowTest, PackIndexingHasOneTimeBudgetPerWriteBack) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
echo p > p.txt && git add p.txt && git commit -q -m packed-commit
git repack -q -d
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  WriteBackOptions tight;
  tight.index_budget = std::chrono::milliseconds(1);
  auto cut = WriteBack(plan->write_back, tight);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_TRUE(absl::IsDeadlineExceeded(cut->import_status)) << cut->import_status;
  EXPECT_FALSE(cut->fetched);
  EXPECT_TRUE(cut->rejected.empty()) << absl::StrJoin(cut->rejected, "\n");
  EXPECT_NE(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "packed-commit");
  auto next = WriteBack(plan->write_back);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_TRUE(next->import_status.ok()) << next->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "packed-commit");
}

TEST(GitShadowBackoffTest, DoublesFromTwoSecondsUpToFiveMinutes) {
  EXPECT_EQ(ImportBackoffSeconds(0), 0);
  EXPECT_EQ(ImportBackoffSeconds(1), 2);
  EXPECT_EQ(ImportBackoffSeconds(2), 4);
  EXPECT_EQ(ImportBackoffSeconds(5), 32);
  EXPECT_EQ(ImportBackoffSeconds(8), 256);
  EXPECT_EQ(ImportBackoffSeconds(9), 300);
  EXPECT_EQ(ImportBackoffSeconds(1000), 300);
}

// 10,000 refs beside the session's branch: bounded work and report, and the
// branch itself is still imported.
TEST_F(GitShadowTest, TenThousandRefsInsideAreNotImportedAndDoNotHideTheBranch) {
  REQUIRE_SANDBOX_EMULATION();
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ShResult r = RunInSandbox(*plan, R"SH(
set -e
git commit -q --allow-empty -m real
c=$(git rev-parse HEAD)
for i in $(seq 10000); do echo "create refs/heads/lazaret/flood/$i $c"; done | git update-ref --stdin
git for-each-ref refs/heads/lazaret/flood | wc -l
)SH");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("10000"), std::string::npos) << r.out;
  auto report = WriteBack(plan->write_back);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->import_status.ok()) << report->import_status;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-test"), "real");
  EXPECT_EQ(HostGit(repo, "for-each-ref refs/heads/lazaret/flood"), "");
  EXPECT_EQ(report->rejected,
            std::vector<std::string>{"more than 1000 refs other than lazaret/agent-test were made "
                                     "or moved inside; none is imported"});
}

}  // namespace
}  // namespace lazaret::cli::gitshadow
