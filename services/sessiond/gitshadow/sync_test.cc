// Keeping the state and the host in step (sync.h): the refs a session sees
// and may move, sessions side by side, and work a session left behind.
#include "services/sessiond/gitshadow/sync.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/gitshadow/test_fixture.h"
#include "tests/support/git_test_util.h"

namespace lazaret::cli::gitshadow {
namespace {

using test::HostGit;
using test::ShellQuote;
using test::TrimTrailing;

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

}  // namespace
}  // namespace lazaret::cli::gitshadow
