// Planning the sandbox's git mounts (plan.h): the plan itself, and, with
// the sandbox emulated, the agent really running git in it.
#include "services/sessiond/gitshadow/plan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/gitshadow/sync.h"
#include "services/sessiond/gitshadow/test_fixture.h"
#include "tests/support/git_test_util.h"

namespace lazaret::cli::gitshadow {
namespace {

using test::HostGit;
using test::HostObjects;
using test::HostRepoState;
using test::PathExists;
using test::ShellQuote;
using test::TrimTrailing;

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

TEST_F(GitShadowTest, BranchFlagPicksAnotherAgentBranch) {
  const std::string repo = MakeRepo("repo");
  auto plan = Plan(repo, "fix-1");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->agent_branch, "lazaret/fix-1");
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/fix-1"), HostGit(repo, "rev-parse HEAD"));
  EXPECT_FALSE(Plan(repo, "bad..name").ok());
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

}  // namespace
}  // namespace lazaret::cli::gitshadow
