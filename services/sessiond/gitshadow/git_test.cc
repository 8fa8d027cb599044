// Host git is never run without a deadline.
#include "services/sessiond/gitshadow/git.h"

#include <gtest/gtest.h>

#include <chrono>

namespace lazaret::cli::gitshadow {
namespace {

TEST(HostGitTest, RefusesToRunWithoutADeadline) {
  absl::StatusOr<GitResult> r = RunGitRaw("/", {"--version"}, std::chrono::milliseconds(0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  r = RunGitRaw("/", {"--version"}, kGitQueryTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
}

}  // namespace
}  // namespace lazaret::cli::gitshadow
