// Importing what the agent committed (import.h), through WriteBack: what
// the sweep removes, what is refused, and the bounds on repeating work.
#include "services/sessiond/gitshadow/import.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/gitshadow/plan.h"
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
# A symlink in place of a loose-object fan-out directory, under a name the
# commit above did not already use.
for d in cd ce cf d0 d1 d2 d3 d4 d5 d6 d7 d8 d9; do
  if [ ! -e $O/$d ]; then ln -s /run/lazaret/git/hooks $O/$d; echo "fanout=$d"; break; fi
done
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
  const size_t fanout = r.out.find("fanout=");
  ASSERT_NE(fanout, std::string::npos) << r.out;
  const std::string fanout_link =
      absl::StrCat("objects/", r.out.substr(fanout + 7, 2), ": symlink");
  for (const std::string& what :
       {std::string("objects/ab/cdef0123456789abcdef0123456789abcdef01: symlink"),
        std::string("objects/pack/pack-0123456789abcdef0123456789abcdef01234567.pack: FIFO"),
        fanout_link, std::string("refs/evil-link: symlink"), std::string("refs/evil-fifo: FIFO"),
        std::string("logs/evil-log: symlink"), std::string("logs/agent-test-fifo: FIFO")}) {
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
