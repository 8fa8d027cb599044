// The Git Shadow end to end: the real `lazaret run` (podman, runsc, the
// network sidecar, lazaret-sandbox-init) on temporary repositories, with the
// agent attacking the repository from inside the gVisor sandbox, and every
// outcome checked on the HOST afterwards: hashes of .git/config and hooks,
// refs, reflogs, objects, HEAD and index, and marker files that only exist if
// agent code ran on the host. Covers every Git case of THREATS.md. Runs as
// root (rootful podman), with a private HOME, XDG dirs and runtime dir, and
// the default profile (image localhost/lazaret-sandbox:trixie, built by
// `lazaret image build` when missing).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/git_test_util.h"
#include "tests/support/test_support.h"

namespace lazaret {
namespace {

using test::Binary;
using test::CommandResult;
using test::HostGit;
using test::HostObjects;
using test::HostRepoState;
using test::PathExists;
using test::Sh;
using test::ShellQuote;
using test::TrimTrailing;

constexpr char kAgentBranch[] = "lazaret/agent-default";
constexpr char kImage[] = "localhost/lazaret-sandbox:trixie";

class GitShadowE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = new std::string;
    if (geteuid() != 0) {
      *skip_reason_ = "needs root for rootful podman (CI runs the e2e tests as root)";
      return;
    }
    for (const char* tool : {"podman", "runsc", "git"}) {
      if (Sh(std::string("command -v ") + tool).exit_code != 0) {
        *skip_reason_ = std::string(tool) + " is not installed (deploy/setup-host.sh installs it)";
        return;
      }
    }
    base_ = new test::TempDir("laz-gse2e");
    env_ = new std::map<std::string, std::string>{
        {"HOME", base_->path() + "/home"},
        {"XDG_CONFIG_HOME", base_->path() + "/home/.config"},
        {"XDG_STATE_HOME", base_->path() + "/home/.local/state"},
        {"XDG_DATA_HOME", base_->path() + "/home/.local/share"},
        {"XDG_RUNTIME_DIR", ""},
        {"LAZARET_RUNTIME_DIR", base_->path() + "/run"},
        {"GIT_AUTHOR_NAME", ""},
        {"GIT_DIR", ""}};
    Sh("mkdir -p " + ShellQuote(base_->path() + "/home/.config/lazaret"));
    // Two more profiles, for sessions of different profiles on one repo.
    std::ofstream(base_->path() + "/home/.config/lazaret/config.toml")
        << "[profiles.alpha]\nimage = \"" << kImage << "\"\n\n[profiles.beta]\nimage = \"" << kImage
        << "\"\n";
    const CommandResult help = Lazaret(base_->path(), {"run", "--help"});
    if (help.exit_code != 0 || help.out.find("usage: lazaret run") == std::string::npos) {
      *skip_reason_ =
          "`lazaret run` is not available in this build yet (" + TrimTrailing(help.err) + ")";
      return;
    }
    if (Sh(std::string("podman image exists ") + kImage).exit_code != 0) {
      const CommandResult built = Lazaret(base_->path(), {"image", "build"});
      if (built.exit_code != 0) {
        *skip_reason_ =
            "the sandbox image is missing and `lazaret image build` failed: " + built.err;
        return;
      }
    }
    const CommandResult up = Lazaret(base_->path(), {"up"});
    if (up.exit_code != 0) *skip_reason_ = "`lazaret up` failed: " + up.err;
  }

  static void TearDownTestSuite() {
    if (base_ != nullptr) {
      Lazaret(base_->path(), {"down"});
      Lazaret(base_->path(), {"clean"});
    }
    delete base_;
    delete env_;
    delete skip_reason_;
    base_ = nullptr;
    env_ = nullptr;
    skip_reason_ = nullptr;
  }

  void SetUp() override {
    // Only a non-root run skips; anything else missing is a failure, so a
    // broken install or image build can never pass as "skipped".
    if (geteuid() != 0) GTEST_SKIP() << *skip_reason_;
    if (!skip_reason_->empty()) FAIL() << *skip_reason_;
    dir_ = base_->path() + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    Sh("rm -rf " + ShellQuote(dir_) + " && mkdir -p " + ShellQuote(dir_));
    marker_ = dir_ + "/PWNED";
  }

  // `lazaret <args>` run in `cwd` with the test's private environment.
  static CommandResult Lazaret(const std::string& cwd, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "--chdir=" + cwd, Binary("lazaret")};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::Run(argv, *env_);
  }

  // The agent: `lazaret run [flags] -- bash -c SCRIPT` in `workspace`.
  CommandResult Agent(const std::string& workspace, const std::string& script,
                      const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "bash", "-c",
                             "export GIT_AUTHOR_NAME=Agent GIT_AUTHOR_EMAIL=agent@sandbox "
                             "GIT_COMMITTER_NAME=Agent GIT_COMMITTER_EMAIL=agent@sandbox\n" +
                                 script});
    return Lazaret(workspace, args);
  }

  // A repository with history, a tag, a second branch, a remote-tracking
  // ref, a staged-only file and a developer hook.
  std::string MakeRepo(const std::string& name) {
    const std::string repo = dir_ + "/" + name;
    Sh("mkdir -p " + ShellQuote(repo));
    HostGit(repo, "init -q");
    HostGit(repo, "config user.name Dev && git config user.email dev@example.com");
    Sh("cd " + ShellQuote(repo) + " && echo one > a.txt && echo keep > b.txt");
    HostGit(repo, "add a.txt b.txt && git commit -q -m one && git tag v1 && git branch feature");
    Sh("cd " + ShellQuote(repo) + " && echo two >> a.txt");
    HostGit(repo, "commit -q -am two && git update-ref refs/remotes/origin/main HEAD~1");
    Sh("cd " + ShellQuote(repo) + " && echo staged > staged.txt");
    HostGit(repo, "add staged.txt");
    Sh("cd " + ShellQuote(repo) +
       " && printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit && chmod +x "
       ".git/hooks/pre-commit");
    return repo;
  }

  // <data_root>/default/git/<key>: the agent's object store, refs and logs.
  std::string StateDir() {
    return TrimTrailing(
        Sh("ls -d " + ShellQuote(base_->path()) + "/home/.local/share/lazaret/default/git/*/").out);
  }

  static test::TempDir* base_;
  static std::map<std::string, std::string>* env_;
  static std::string* skip_reason_;
  std::string dir_;
  std::string marker_;
};

test::TempDir* GitShadowE2eTest::base_ = nullptr;
std::map<std::string, std::string>* GitShadowE2eTest::env_ = nullptr;
std::string* GitShadowE2eTest::skip_reason_ = nullptr;

TEST_F(GitShadowE2eTest, AgentCommitLandsOnAgentBranchOnly) {
  const std::string repo = MakeRepo("repo");
  const std::string before = HostRepoState(repo);
  const std::set<std::string> objects_before = HostObjects(repo);
  const std::string head = HostGit(repo, "rev-parse HEAD");
  CommandResult r = Agent(repo, R"SH(
set -e
git status --porcelain | grep -q '^A  staged.txt'
test "$(git rev-parse --abbrev-ref HEAD)" = lazaret/agent-default
echo agent > agent.txt
git add agent.txt
git diff --cached --name-only | grep -q agent.txt
git commit -q -m 'agent work'
git branch lazaret/topic
git log --oneline -2
git branch -a
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("agent work"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("feature"), std::string::npos) << r.out;
  // The developer sees the commit on the agent branch, in their own objects.
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s " + std::string(kAgentBranch)), "agent work");
  // A branch beside its own stays inside, and the developer is told.
  EXPECT_NE(Sh("cd " + ShellQuote(repo) + " && git rev-parse -q --verify lazaret/topic").exit_code,
            0);
  EXPECT_NE(r.err.find("lazaret/topic: this session may move only lazaret/agent-default"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(HostGit(repo, "diff --name-only main lazaret/agent-default"), "agent.txt\nstaged.txt");
  HostGit(repo, "fsck --no-dangling --connectivity-only");
  // Their branch, index, tags, reflogs, config and hooks are untouched.
  EXPECT_EQ(HostGit(repo, "rev-parse HEAD"), head);
  EXPECT_EQ(HostGit(repo, "status --porcelain"), "A  staged.txt\n?? agent.txt");
  EXPECT_EQ(HostRepoState(repo), before);
  const std::set<std::string> objects_after = HostObjects(repo);
  for (const auto& o : objects_before) EXPECT_EQ(objects_after.count(o), 1u) << o;
}

TEST_F(GitShadowE2eTest, FreshCloneShowsAllBranchesInside) {
  MakeRepo("origin");
  HostGit(dir_, "clone -q origin clone");
  const std::string clone = dir_ + "/clone";
  ASSERT_TRUE(PathExists(clone + "/.git/packed-refs"));
  CommandResult r = Agent(clone, "git branch -a && git tag && git status --short");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("remotes/origin/feature"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("remotes/origin/main"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v1"), std::string::npos) << r.out;
}

TEST_F(GitShadowE2eTest, RefWritesOutsideAgentNamespaceFail) {
  const std::string repo = MakeRepo("repo");
  const std::string before = HostRepoState(repo);
  CommandResult r = Agent(repo, R"SH(
for cmd in "git config core.pager evil" "git config --unset user.name" \
           "git remote add evil /tmp" "git branch evil" "git tag evil" \
           "git update-ref refs/heads/main HEAD~1" "git update-ref -d refs/heads/feature" \
           "git update-ref refs/remotes/origin/main HEAD" "git checkout -q -b evil2"; do
  $cmd >/dev/null 2>&1 && echo "ALLOWED: $cmd"
done
echo x >> .git/config 2>/dev/null && echo "ALLOWED: append to config"
echo done
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("ALLOWED"), std::string::npos) << r.out;
  EXPECT_EQ(HostRepoState(repo), before);
  HostGit(repo, "remote add origin https://example.com/repo.git");
  const std::string with_remote = HostRepoState(repo);
  r = Agent(repo, "git remote set-url origin /tmp/evil 2>/dev/null && echo ALLOWED; true");
  EXPECT_EQ(r.out.find("ALLOWED"), std::string::npos) << r.out;
  EXPECT_EQ(HostRepoState(repo), with_remote);
  EXPECT_EQ(HostGit(repo, "remote get-url origin"), "https://example.com/repo.git");
}

TEST_F(GitShadowE2eTest, HooksAndConfigPlantedInsideNeverRunOnHost) {
  const std::string repo = MakeRepo("repo");
  const std::string hooks_and_config =
      "cd " + ShellQuote(repo) + "/.git && sha256sum config hooks/* && ls -l hooks";
  const std::string hooks_and_config_before = Sh(hooks_and_config).out;
  const std::string m = marker_;
  CommandResult r = Agent(repo, R"SH(
set -e
for h in pre-commit post-commit post-checkout post-merge pre-push reference-transaction \
         fsmonitor-watchman post-index-change; do
  printf '#!/bin/sh\ntouch )SH" + m +
                                    R"SH( 2>/dev/null\nexit 0\n' > .git/hooks/$h
  chmod +x .git/hooks/$h
done
rm .git/config
cat > .git/config <<EOF
[core]
  repositoryformatversion = 0
  bare = false
  pager = touch )SH" + m + R"SH(
  fsmonitor = touch )SH" + m + R"SH(
  hooksPath = /workspace/evil-hooks
  sshCommand = touch )SH" + m + R"SH(
  editor = touch )SH" + m + R"SH(
[diff]
  external = touch )SH" + m + R"SH(
[alias]
  status = !touch )SH" + m + R"SH(
  log = !touch )SH" + m + R"SH(
[include]
  path = /workspace/evil.cfg
EOF
mkdir -p evil-hooks && cp .git/hooks/* evil-hooks/
printf '[core]\n  pager = touch %s\n' )SH" +
                                    m + R"SH( > evil.cfg
git commit -q --allow-empty -m 'hooks ran here, inside'
echo planted
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("planted"), std::string::npos) << r.out;
  Sh("rm -f " + ShellQuote(marker_));  // hooks inside the sandbox may run; only the host matters
  // The developer uses git on the host as usual - each command must succeed
  // (HostGit fails the test otherwise), paged as on a terminal, and the
  // marker is checked after every one.
  const std::vector<std::string> developer = {
      "status",
      "--paginate log -1",
      "--paginate diff HEAD~1",
      "diff lazaret/agent-default",
      "commit -q -m dev",
      "checkout -q feature",
      "checkout -q main",
      "merge -q --no-edit lazaret/agent-default",
  };
  for (const std::string& cmd : developer) {
    HostGit(repo, cmd);
    EXPECT_FALSE(PathExists(marker_)) << "agent code ran on the host during `git " << cmd << "`";
  }
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s HEAD^2"), "hooks ran here, inside")
      << "the agent's commit was imported and merged";
  EXPECT_EQ(Sh(hooks_and_config).out, hooks_and_config_before);
}

TEST_F(GitShadowE2eTest, HostConfigChangeIsVisibleInsideAtOnce) {
  const std::string repo = MakeRepo("repo");
  // The sandbox reads the key, says it is ready, and waits; the host then
  // runs `git config` (which replaces .git/config by rename) and says so.
  std::thread host([&] {
    test::WaitFor([&] { return PathExists(repo + "/ready"); }, std::chrono::seconds(120));
    HostGit(repo, "config lazaret.probe changed");
    Sh("touch " + ShellQuote(repo + "/flag"));
  });
  CommandResult r = Agent(repo, R"SH(
before=$(git config lazaret.probe || echo unset)
touch /workspace/ready
for i in $(seq 600); do [ -e /workspace/flag ] && break; sleep 0.1; done
echo "$before -> $(git config lazaret.probe)"
)SH");
  Sh("touch " + ShellQuote(repo + "/ready"));  // releases the thread if the sandbox never started
  host.join();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(TrimTrailing(r.out), "unset -> changed");
}

TEST_F(GitShadowE2eTest, UmountMoveOrDeleteGitInsideLeavesHostIntact) {
  const std::string repo = MakeRepo("repo");
  const std::string before = HostRepoState(repo);
  CommandResult r = Agent(repo, R"SH(
umount /workspace/.git 2>/dev/null && echo UNMOUNTED
umount -l /workspace/.git 2>/dev/null && echo UNMOUNTED
mv /workspace/.git /workspace/moved 2>/dev/null && echo MOVED
rm -rf /workspace/.git 2>/dev/null
rm -rf /workspace/.git/refs/heads/main /workspace/.git/objects/* 2>/dev/null
echo done
)SH");
  EXPECT_EQ(r.out.find("UNMOUNTED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MOVED"), std::string::npos) << r.out;
  EXPECT_EQ(HostRepoState(repo), before);
  HostGit(repo, "fsck --no-dangling");
  EXPECT_EQ(HostGit(repo, "status --porcelain"), "A  staged.txt");
}

TEST_F(GitShadowE2eTest, RepositoryPlantedInTheWorkingTreeIsNeutralisedAtSessionEnd) {
  const std::string repo = MakeRepo("repo");
  CommandResult r = Agent(repo, R"SH(
set -e
mkdir -p vendor/evil && git init -q vendor/evil
git -C vendor/evil config core.fsmonitor 'touch /tmp/pwned'
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("neutralised a git repository"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(repo + "/vendor/evil/.git ->"), std::string::npos) << r.err;
  struct stat st {};
  EXPECT_NE(lstat((repo + "/vendor/evil/.git").c_str(), &st), 0) << "still armed";
  // A session that plants nothing says nothing about it.
  CommandResult quiet = Agent(repo, "git status --short >/dev/null");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("neutralised"), std::string::npos) << quiet.err;
}

TEST_F(GitShadowE2eTest, PlantedSymlinksFifosAndDevicesAreNeverFollowed) {
  const std::string repo = MakeRepo("repo");
  const std::string before = HostRepoState(repo);
  CommandResult r = Agent(repo, R"SH(
echo w > w.txt && git add w.txt && git commit -q -m work
O=.git/objects
mkdir -p $O/ab $O/pack
ln -s /etc/shadow $O/ab/cdef0123456789abcdef0123456789abcdef01
mkfifo $O/pack/pack-0123456789abcdef0123456789abcdef01234567.pack
touch $O/pack/pack-0123456789abcdef0123456789abcdef01234567.idx
mknod $O/ab/1111111111111111111111111111111111111111 c 1 3 2>/dev/null
# A symlinked fan-out directory, under a name the commit did not already use.
for d in cd ce cf d0 d1 d2 d3 d4 d5 d6 d7 d8 d9; do
  [ -e $O/$d ] || { ln -s /run/lazaret/git/hooks $O/$d; break; }
done
ln -s /run/lazaret/git/refs/heads/main .git/refs/heads/lazaret/evil-link
mkfifo .git/refs/heads/lazaret/evil-fifo
ln -s /run/lazaret/git/config .git/logs/refs/heads/lazaret/evil-log
mkfifo .git/logs/refs/heads/lazaret/agent-default-fifo
echo planted
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-default"), "work");
  EXPECT_EQ(HostRepoState(repo), before);
  const std::string state = StateDir();
  ASSERT_FALSE(state.empty());
  EXPECT_EQ(Sh("find " + ShellQuote(state) + " ! -type f ! -type d").out, "")
      << "no symlink, FIFO or device left in the state directory";
  EXPECT_FALSE(PathExists(repo + "/.git/refs/heads/lazaret/evil-link"));
}

TEST_F(GitShadowE2eTest, AlternatesCreatedInsideAreNotHonouredOnHost) {
  const std::string repo = MakeRepo("repo");
  const std::string before = HostRepoState(repo);
  const std::string head = HostGit(repo, "rev-parse HEAD");
  CommandResult r = Agent(repo, R"SH(
set -e
git init -q --bare /workspace/evil.git
echo /workspace/evil.git/objects >> .git/objects/info/alternates
echo http://192.0.2.1/evil > .git/objects/info/http-alternates
blob=$(echo evil | GIT_DIR=/workspace/evil.git git hash-object -w --stdin)
tree=$(printf '100644 blob %s\tevil\n' $blob | GIT_DIR=/workspace/evil.git git mktree)
c=$(GIT_DIR=/workspace/evil.git git commit-tree -m evil $tree)
# The Git Shadow's write-back (every 2 s) may already have replaced the
# alternates, and git then refuses the ref itself: the attack ends sooner.
git update-ref refs/heads/lazaret/agent-default $c || echo "alternates already replaced"
echo planted
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(PathExists(repo + "/.git/objects/info/alternates"));
  EXPECT_FALSE(PathExists(repo + "/.git/objects/info/http-alternates"));
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-default"), head)
      << "a commit whose objects live outside the agent's store is not imported";
  EXPECT_EQ(HostRepoState(repo), before);
  HostGit(repo, "fsck --no-dangling");
}

TEST_F(GitShadowE2eTest, GcPruneInsideKeepsHostObjects) {
  const std::string repo = MakeRepo("repo");  // has a staged-only blob
  HostGit(repo, "commit-tree -m dangling HEAD^{tree}");
  const std::string before = HostRepoState(repo);
  const std::set<std::string> objects_before = HostObjects(repo);
  CommandResult r = Agent(repo, R"SH(
echo x > x.txt && git add x.txt && git commit -q -m x
git gc -q --prune=now --aggressive; echo "gc=$?"
git prune --expire=now; git repack -a -d -f -q
git reflog expire --all --expire=now 2>/dev/null
git pack-refs --all 2>/dev/null
true
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gc=0"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-default"), "x");
  EXPECT_EQ(HostRepoState(repo), before);
  const std::set<std::string> objects_after = HostObjects(repo);
  for (const auto& o : objects_before) EXPECT_EQ(objects_after.count(o), 1u) << o;
  EXPECT_EQ(HostGit(repo, "diff --cached --name-only"), "staged.txt");
}

TEST_F(GitShadowE2eTest, LinkedWorktreeWorksInside) {
  const std::string repo = MakeRepo("repo");
  HostGit(repo, "worktree add -q ../wt feature");
  const std::string wt = dir_ + "/wt";
  const std::string before = HostRepoState(repo);
  CommandResult r = Agent(wt, R"SH(
set -e
git rev-parse --abbrev-ref HEAD
echo y > y.txt && git add y.txt && git commit -q -m in-worktree
echo 'gitdir: /tmp' > .git 2>/dev/null && echo REWROTE || true
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(kAgentBranch), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("REWROTE"), std::string::npos) << r.out;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-default"), "in-worktree");
  EXPECT_EQ(HostGit(wt, "rev-parse --abbrev-ref HEAD"), "feature");
  EXPECT_EQ(HostRepoState(repo), before);
}

TEST_F(GitShadowE2eTest, SubmodulesAreReadOnlyInside) {
  MakeRepo("lib");
  const std::string repo = MakeRepo("super");
  HostGit(repo, "submodule add -q ../lib vendor/lib && git commit -q -m sub");
  const std::string before = HostRepoState(repo);
  CommandResult r = Agent(repo, R"SH(
git status --short >/dev/null && echo STATUS-OK
git -C vendor/lib log --oneline -1 >/dev/null && echo SUBLOG-OK
(cd vendor/lib && echo z > z && git add z && git commit -q -m z) 2>/dev/null && echo SUBCOMMIT
echo 'gitdir: /workspace/evil' > vendor/lib/.git 2>/dev/null && echo REWROTE
true
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("STATUS-OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SUBLOG-OK"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SUBCOMMIT"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("REWROTE"), std::string::npos) << r.out;
  EXPECT_EQ(HostRepoState(repo), before);
}

TEST_F(GitShadowE2eTest, ShallowCloneWorksInside) {
  MakeRepo("origin");
  HostGit(dir_, "clone -q --depth 1 file://" + dir_ + "/origin shallow");
  const std::string repo = dir_ + "/shallow";
  CommandResult r = Agent(repo, R"SH(
set -e
test "$(git rev-parse --is-shallow-repository)" = true
git commit -q --allow-empty -m on-shallow
)SH");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-default"), "on-shallow");
}

TEST_F(GitShadowE2eTest, NoRepositoryStillRuns) {
  const std::string plain = dir_ + "/plain";
  Sh("mkdir -p " + ShellQuote(plain));
  CommandResult r = Agent(plain, "git status 2>&1 | head -1; echo made > f.txt; exit 7");
  EXPECT_EQ(r.exit_code, 7) << r.out << r.err;
  EXPECT_NE(r.out.find("not a git repository"), std::string::npos) << r.out;
  EXPECT_EQ(TrimTrailing(test::ReadFile(plain + "/f.txt")), "made");
}

TEST_F(GitShadowE2eTest, BranchFlagPicksTheAgentBranch) {
  const std::string repo = MakeRepo("repo");
  CommandResult r =
      Agent(repo, "git rev-parse --abbrev-ref HEAD && git commit -q --allow-empty -m b",
            {"--branch", "fix-1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(TrimTrailing(r.out), "lazaret/fix-1");
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/fix-1"), "b");
}

TEST_F(GitShadowE2eTest, WorktreeModeLeavesTheDevelopersTreeUntouched) {
  const std::string repo = MakeRepo("repo");
  const std::string before = HostRepoState(repo);
  const std::string files =
      "cd " + ShellQuote(repo) + " && sha256sum *.txt && git status --porcelain";
  const std::string files_before = Sh(files).out;
  CommandResult r = Agent(repo, R"SH(
set -e
test ! -e staged.txt
echo wt > a.txt && git commit -q -am in-agent-worktree
)SH",
                          {"--worktree"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-default"), "in-agent-worktree");
  EXPECT_EQ(Sh(files).out, files_before);
  EXPECT_EQ(HostRepoState(repo), before);
}

// THREATS "a session moves a ref outside its own branch": a session of
// profile alpha tries to move another profile's agent branch and a branch
// the developer made below lazaret/, inside and through packed-refs. The
// host keeps both, the developer is told, and alpha's own commit lands.
TEST_F(GitShadowE2eTest, SessionCannotMoveAnotherProfilesOrTheDevelopersLazaretBranches) {
  const std::string repo = MakeRepo("repo");
  HostGit(repo, "branch lazaret/agent-beta HEAD~1 && git branch lazaret/review feature");
  const std::string beta = HostGit(repo, "rev-parse lazaret/agent-beta");
  const std::string review = HostGit(repo, "rev-parse lazaret/review");
  CommandResult r = Agent(repo, R"SH(
git commit -q --allow-empty -m alpha-work
git update-ref refs/heads/lazaret/agent-beta HEAD 2>/dev/null && echo MOVED-BETA
git branch -f lazaret/review HEAD 2>/dev/null && echo MOVED-REVIEW
git update-ref -d refs/heads/lazaret/review 2>/dev/null && echo DELETED-REVIEW
echo $(git rev-parse HEAD) > .git/refs/heads/lazaret/agent-beta 2>/dev/null && echo WROTE-BETA
sed -i "s|^[0-9a-f]* refs/heads/lazaret/agent-beta$|$(git rev-parse HEAD) refs/heads/lazaret/agent-beta|" \
  /run/lazaret/git-session/packed-refs
git branch lazaret/agent-beta-2
git branch --list 'lazaret/*'
)SH",
                          {"alpha"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* refused : {"MOVED-BETA", "MOVED-REVIEW", "DELETED-REVIEW", "WROTE-BETA"}) {
    EXPECT_EQ(r.out.find(refused), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("lazaret/agent-beta\n"), std::string::npos) << "visible inside: " << r.out;
  EXPECT_NE(r.out.find("lazaret/review\n"), std::string::npos) << "visible inside: " << r.out;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-alpha"), "alpha-work");
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-beta"), beta);
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/review"), review);
  EXPECT_NE(
      Sh("cd " + ShellQuote(repo) + " && git rev-parse -q --verify lazaret/agent-beta-2").exit_code,
      0);
  for (const char* msg :
       {"lazaret/agent-beta (packed): this session may move only lazaret/agent-alpha",
        "lazaret/agent-beta-2: this session may move only lazaret/agent-alpha"}) {
    EXPECT_NE(r.err.find(msg), std::string::npos) << msg << "\n" << r.err;
  }
}

// Sessions of two profiles on one repository at the same time: each
// commits while the other runs, each tries to move the other's branch, both
// import, neither touches the other's.
TEST_F(GitShadowE2eTest, ConcurrentSessionsOfTwoProfilesImportOnlyTheirOwnBranches) {
  const std::string repo = MakeRepo("repo");
  const std::string start = HostGit(repo, "rev-parse HEAD");
  // Each session commits, says so in the shared working tree, waits for the
  // other to have done the same, then tries to move the other's branch.
  auto script = [](const std::string& me, const std::string& other) {
    return "set -e\ngit commit -q --allow-empty -m " + me + "-work\ntouch /workspace/" + me +
           ".ready\nfor i in $(seq 1200); do [ -e /workspace/" + other +
           ".ready ] && break; sleep 0.1; done\ntest -e /workspace/" + other +
           ".ready\ngit update-ref refs/heads/lazaret/agent-" + other +
           " HEAD 2>/dev/null || echo REFUSED\ngit rev-parse HEAD\n";
  };
  CommandResult beta;
  std::thread other([&] { beta = Agent(repo, script("beta", "alpha"), {"beta"}); });
  CommandResult alpha = Agent(repo, script("alpha", "beta"), {"alpha"});
  Sh("touch " + ShellQuote(repo + "/alpha.ready"));  // releases beta if alpha never started
  other.join();
  ASSERT_EQ(alpha.exit_code, 0) << alpha.out << alpha.err;
  ASSERT_EQ(beta.exit_code, 0) << beta.out << beta.err;
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-alpha"), "alpha-work");
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-beta"), "beta-work");
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-alpha~1"), start);
  EXPECT_EQ(HostGit(repo, "rev-parse lazaret/agent-beta~1"), start);
  EXPECT_NE(alpha.out.find(HostGit(repo, "rev-parse lazaret/agent-alpha")), std::string::npos);
  EXPECT_NE(beta.out.find(HostGit(repo, "rev-parse lazaret/agent-beta")), std::string::npos);
}

// THREATS "write-back flooded": inside, 10,000 refs and a large junk pack
// (with an index, so it looks finished). Teardown after the command exits
// takes no more than a few seconds longer than a clean session's, the
// write-back messages stay few, and the agent's real commit imports.
TEST_F(GitShadowE2eTest, WriteBackFloodDoesNotDelayTeardownOrFloodTheLog) {
  const std::string repo = MakeRepo("repo");
  // The command's last act is to write the time; teardown is from there to
  // `lazaret run` returning.
  auto now = [] {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
  };
  auto teardown_seconds = [&](double returned) {
    return returned - std::stod(test::ReadFile(repo + "/.done"));
  };
  CommandResult clean = Agent(repo, "git commit -q --allow-empty -m clean\ndate +%s.%N > .done");
  const double clean_teardown = teardown_seconds(now());
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;

  CommandResult flood = Agent(repo, R"SH(
set -e
git commit -q --allow-empty -m real-work
c=$(git rev-parse HEAD)
for i in $(seq 10000); do echo "create refs/heads/lazaret/flood/$i $c"; done | git update-ref --stdin
p=.git/objects/pack/pack-0123456789abcdef0123456789abcdef01234567
mkdir -p .git/objects/pack
head -c 64M /dev/urandom > $p.pack
head -c 4096 /dev/urandom > $p.idx
# Wait (bounded) until a periodic write-back has imported the commit - the
# host's ref is visible read-only under /run/lazaret/git - so the flood has
# been through a tick; three times, so it goes through several.
host_ref() { cat /run/lazaret/git/refs/heads/lazaret/agent-default 2>/dev/null; }
for n in 1 2 3; do
  for i in $(seq 600); do [ "$(host_ref)" = "$c" ] && break; sleep 0.1; done
  [ "$(host_ref)" = "$c" ] && echo "imported-during-session-$n"
  git commit -q --allow-empty -m after-flood-$n
  c=$(git rev-parse HEAD)
done
date +%s.%N > .done
)SH");
  const double flood_teardown = teardown_seconds(now());
  ASSERT_EQ(flood.exit_code, 0) << flood.out << flood.err;
  for (const char* tick :
       {"imported-during-session-1", "imported-during-session-2", "imported-during-session-3"}) {
    EXPECT_NE(flood.out.find(tick), std::string::npos) << flood.out;
  }
  EXPECT_LT(flood_teardown, clean_teardown + 5)
      << "teardown took " << flood_teardown << " s after a flood, " << clean_teardown
      << " s after a clean session";
  EXPECT_EQ(HostGit(repo, "log -1 --format=%s lazaret/agent-default"), "after-flood-3");
  EXPECT_EQ(HostGit(repo, "for-each-ref refs/heads/lazaret/flood"), "");
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t pos = 0; (pos = flood.err.find(what, pos)) != std::string::npos; ++pos) ++n;
    return n;
  };
  const size_t lines = count("lazaret: git shadow:");
  std::cerr << "teardown after the command: clean " << clean_teardown << " s, flood "
            << flood_teardown << " s; " << lines << " write-back lines\n";
  // Every tick saw the flood and the pack; each problem is told once.
  EXPECT_EQ(count("more than 1000 refs other than lazaret/agent-default were made or moved "
                  "inside; none is imported"),
            1u)
      << flood.err;
  EXPECT_EQ(count(": not a valid pack"), 1u) << flood.err;
  EXPECT_LE(lines, 40u) << flood.err;
  EXPECT_NE(flood.err.find("pack-0123456789abcdef0123456789abcdef01234567.pack: not a valid pack"),
            std::string::npos)
      << flood.err;
}

}  // namespace
}  // namespace lazaret
