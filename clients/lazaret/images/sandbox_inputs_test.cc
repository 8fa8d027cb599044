#include "clients/lazaret/images/sandbox_inputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::cli::images {
namespace {

using ::testing::ElementsAre;

TEST(PackageListTest, CommentsAndBlankLinesAreSkipped) {
  auto p = ParsePackageList("# c\nbash\n\n  git  # vcs\nca-certificates\n");
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(*p, ElementsAre("bash", "git", "ca-certificates"));
  EXPECT_FALSE(ParsePackageList("bash; rm -rf /\n").ok());
  EXPECT_FALSE(ParsePackageList("--include=x\n").ok());
  EXPECT_FALSE(ParsePackageList("# nothing\n").ok());
}

TEST(SandboxInputsHashTest, ChangesWithEveryInputAndOnlyThen) {
  const std::string a = SandboxInputsHash({"bash", "git"}, "http://deb.debian.org/debian");
  EXPECT_EQ(a, SandboxInputsHash({"bash", "git"}, "http://deb.debian.org/debian"));
  EXPECT_NE(a, SandboxInputsHash({"bash", "git", "curl"}, "http://deb.debian.org/debian"));
  EXPECT_NE(a, SandboxInputsHash({"bash", "git"}, "http://mirror.example/debian"));
  EXPECT_EQ(a.size(), 64u);
}

}  // namespace
}  // namespace lazaret::cli::images
