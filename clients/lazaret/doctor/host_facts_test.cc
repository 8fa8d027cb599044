#include "clients/lazaret/doctor/host_facts.h"

#include <gtest/gtest.h>

namespace lazaret::cli::doctor {
namespace {

TEST(HostFactsTest, GitAtLeastComparesMajorThenMinor) {
  EXPECT_TRUE(GitAtLeast("git version 2.39.5", 2, 35));
  EXPECT_TRUE(GitAtLeast("git version 2.35.0", 2, 35));
  EXPECT_TRUE(GitAtLeast("git version 3.0", 2, 35));
  EXPECT_TRUE(GitAtLeast("git version 2.43.0.windows.1", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version 2.34.1", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version 1.99.9", 2, 35));
}

TEST(HostFactsTest, AnUnreadableGitVersionIsTooOld) {
  EXPECT_FALSE(GitAtLeast("", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version 2", 2, 35));
  EXPECT_FALSE(GitAtLeast("git version x.y", 2, 35));
}

TEST(HostFactsTest, FirstLineIsTrimmed) {
  EXPECT_EQ(FirstLine("  podman version 4.3.1 \nmore\n"), "podman version 4.3.1");
  EXPECT_EQ(FirstLine("one"), "one");
  EXPECT_EQ(FirstLine(""), "");
}

TEST(HostFactsTest, ASubordinateRangeIsFoundByNameOrUid) {
  const char kText[] = "root:100000:65536\nalice:165536:65536\n1001:231072:65536\n";
  EXPECT_TRUE(HasSubordinateRange(kText, "alice", 1000));
  EXPECT_TRUE(HasSubordinateRange(kText, "bob", 1001));
  EXPECT_FALSE(HasSubordinateRange(kText, "carol", 1002));
  EXPECT_FALSE(HasSubordinateRange("", "alice", 1000));
}

TEST(HostFactsTest, ASmallOrMalformedRangeDoesNotCount) {
  EXPECT_FALSE(HasSubordinateRange("alice:100000:65535\n", "alice", 1000));
  EXPECT_FALSE(HasSubordinateRange("alice:100000\n", "alice", 1000));
  EXPECT_FALSE(HasSubordinateRange("alice:100000:many\n", "alice", 1000));
  EXPECT_FALSE(HasSubordinateRange("alice:100000:65536:x\n", "alice", 1000));
  EXPECT_TRUE(HasSubordinateRange("# comment\nalice:100000:1000000\n", "alice", 1000));
}

}  // namespace
}  // namespace lazaret::cli::doctor
