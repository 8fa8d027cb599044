#include "services/vocab/host_path.h"

#include <gtest/gtest.h>

#include <string>

namespace lazaret::vocab {
namespace {

TEST(HostPathTest, CleanAbsolutePathsAreAbsoluteWithoutDotSegmentsOrControlCharacters) {
  for (const char* ok : {"/", "/a", "/a/b.c", "/a/..b", "/home/dev/.config"}) {
    EXPECT_TRUE(IsCleanAbsolutePath(ok)) << ok;
  }
  for (const char* bad : {"", "a", "a/b", "//", "/a/", "/a//b", "/./a", "/a/.", "/a/..", "/../etc",
                          "/a/../b", "/a\nb", "/a\x7f", "/a\tb"}) {
    EXPECT_FALSE(IsCleanAbsolutePath(bad)) << bad;
  }
  EXPECT_FALSE(IsCleanAbsolutePath(std::string("/a\0b", 4)));
}

TEST(HostPathTest, OneComponentRefusesSeparatorsDotsAndNul) {
  EXPECT_TRUE(CheckOneComponent("a").ok());
  EXPECT_TRUE(CheckOneComponent("..a").ok());
  for (const std::string& bad : {std::string(""), std::string("."), std::string(".."),
                                 std::string("a/b"), std::string("/"), std::string("a\0b", 3)}) {
    EXPECT_FALSE(CheckOneComponent(bad).ok()) << bad;
  }
}

TEST(HostPathTest, AtOrUnderComparesWholeComponents) {
  EXPECT_TRUE(IsAtOrUnder("/a/b", "/a"));
  EXPECT_TRUE(IsAtOrUnder("/a", "/a"));
  EXPECT_FALSE(IsAtOrUnder("/ab", "/a"));
  EXPECT_FALSE(IsAtOrUnder("/a", "/a/b"));
  EXPECT_TRUE(IsAtOrUnder("/x", "/"));
}

TEST(HostPathTest, DirnameAndBasenameOfRelativePaths) {
  EXPECT_EQ(Dirname("a/b/c"), "a/b");
  EXPECT_EQ(Basename("a/b/c"), "c");
  EXPECT_EQ(Dirname("c"), "");
  EXPECT_EQ(Basename("c"), "c");
}

}  // namespace
}  // namespace lazaret::vocab
