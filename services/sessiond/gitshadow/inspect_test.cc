// Finding and checking the host repository (inspect.h), through
// PlanGitShadow: what the Git Shadow refuses, and what it leaves alone.
#include "services/sessiond/gitshadow/inspect.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/gitshadow/test_fixture.h"
#include "tests/support/git_test_util.h"

namespace lazaret::cli::gitshadow {
namespace {

using test::HostGit;
using test::PathExists;
using test::ShellQuote;

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

}  // namespace
}  // namespace lazaret::cli::gitshadow
