#include "services/sessiond/gitshadow/refs.h"

#include <gtest/gtest.h>

namespace lazaret::cli::gitshadow {
namespace {

TEST(GitShadowRefsTest, DefaultAgentBranchIsNamedAfterTheProfile) {
  auto b = CheckAgentBranch("claude", "");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->short_name(), "lazaret/agent-claude");
  EXPECT_EQ(b->refname(), "refs/heads/lazaret/agent-claude");
  EXPECT_EQ(b->relative(), "agent-claude");
}

TEST(GitShadowRefsTest, BranchFlagIsAlwaysInsideTheAgentNamespace) {
  EXPECT_EQ(CheckAgentBranch("p", "feature/x")->short_name(), "lazaret/feature/x");
  EXPECT_EQ(CheckAgentBranch("p", "lazaret/fix")->short_name(), "lazaret/fix");
  // "main" cannot escape: it becomes lazaret/main.
  EXPECT_EQ(CheckAgentBranch("p", "main")->short_name(), "lazaret/main");
  EXPECT_EQ(CheckAgentBranch("p", "refs/heads/main")->short_name(), "lazaret/refs/heads/main");
}

TEST(GitShadowRefsTest, ProtectedEntryIsTheFirstComponentOffTheOwnBranchPath) {
  EXPECT_EQ(ProtectedEntry("agent-beta", "agent-alpha"), "agent-beta");
  EXPECT_EQ(ProtectedEntry("review/1", "agent-alpha"), "review");
  EXPECT_EQ(ProtectedEntry("team/y/z", "team/x"), "team/y");
  EXPECT_EQ(ProtectedEntry("agent-alpha-sandbox-abc", "agent-alpha"), "agent-alpha-sandbox-abc");
  // The own branch itself, and names git could not have beside it.
  EXPECT_EQ(ProtectedEntry("agent-alpha", "agent-alpha"), "");
  EXPECT_EQ(ProtectedEntry("team", "team/x"), "");
  EXPECT_EQ(ProtectedEntry("team/x/y", "team/x"), "");
  EXPECT_TRUE(IsAtOrBelow("team/y/z", "team/y"));
  EXPECT_TRUE(IsAtOrBelow("team/y", "team/y"));
  EXPECT_FALSE(IsAtOrBelow("team/yz", "team/y"));
  EXPECT_FALSE(IsAtOrBelow("team", "team/y"));
  EXPECT_FALSE(IsAtOrBelow("x", ""));
}

TEST(GitShadowRefsTest, RefusesNamesGitWouldRefuse) {
  for (const char* bad :
       {"lazaret/", "a..b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", ".hidden",
        "x.lock", "x/", "x.", "a//b", "a@{1}", "a\x1b[31m", "caf\xc3\xa9", "a\nb"}) {
    EXPECT_FALSE(CheckAgentBranch("p", bad).ok()) << bad;
  }
  EXPECT_FALSE(CheckAgentBranch("bad profile", "").ok());
}

TEST(GitShadowRefsTest, RefNameRules) {
  EXPECT_TRUE(IsValidRefName("refs/heads/lazaret/agent-x"));
  EXPECT_TRUE(IsValidRefName("refs/heads/lazaret/a/b-c_d.e"));
  EXPECT_FALSE(IsValidRefName("refs/heads/lazaret/a/.b"));
  EXPECT_FALSE(IsValidRefName("refs/heads/lazaret/a.lock/b"));
  EXPECT_FALSE(IsValidRefName("HEAD"));
  EXPECT_FALSE(IsValidRefName(std::string(2000, 'a') + "/b"));
}

TEST(GitShadowRefsTest, LooseRefMustBeExactlyOneObjectId) {
  const std::string oid(40, 'a');
  EXPECT_EQ(ParseLooseRef(oid + "\n", 40), oid);
  EXPECT_EQ(ParseLooseRef(oid, 40), oid);
  EXPECT_FALSE(ParseLooseRef("ref: refs/heads/main\n", 40));
  EXPECT_FALSE(ParseLooseRef(oid + "\n\n", 40));
  EXPECT_FALSE(ParseLooseRef(oid + " extra\n", 40));
  EXPECT_FALSE(ParseLooseRef(std::string(40, 'A') + "\n", 40));
  EXPECT_FALSE(ParseLooseRef(std::string(40, '0') + "\n", 40)) << "the null id";
  EXPECT_FALSE(ParseLooseRef(oid + "\n", 64));
  EXPECT_TRUE(ParseLooseRef(std::string(64, 'b') + "\n", 64));
}

TEST(GitShadowRefsTest, PackedAgentRefsTakesOnlyValidAgentEntries) {
  const std::string a(40, 'a'), b(40, 'b');
  const std::string text =
      "# pack-refs with: peeled fully-peeled sorted \n" + a + " refs/heads/main\n" + a +
      " refs/heads/lazaret/one\n^" + b + "\n" + b + " refs/heads/lazaret/dir/two\n" + b +
      " refs/heads/lazaret/bad..name\n" + "zz refs/heads/lazaret/short\n" + std::string(40, '0') +
      " refs/heads/lazaret/null\n" + a + " refs/heads/lazaret/three trailing\n";
  const auto refs = PackedAgentRefs(text, 40);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs.at("one"), a);
  EXPECT_EQ(refs.at("dir/two"), b);
}

}  // namespace
}  // namespace lazaret::cli::gitshadow
