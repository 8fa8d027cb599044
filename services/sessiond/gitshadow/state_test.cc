// The state directory and its locks (state.h), through PlanGitShadow.
#include "services/sessiond/gitshadow/state.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/gitshadow/test_fixture.h"

namespace lazaret::cli::gitshadow {
namespace {

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

}  // namespace
}  // namespace lazaret::cli::gitshadow
