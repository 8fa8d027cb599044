#include "services/common/fs/dir.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "services/common/fs/fd.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::fs {
namespace {

using DirTest = ScratchTest;

TEST_F(DirTest, MakeDirsAtCreatesEveryMissingComponentWithTheMode) {
  auto base = DirFd::Open(base_);
  ASSERT_TRUE(base.ok());
  auto made = MakeDirsAt(*base, "a/b/c", 0700);
  ASSERT_TRUE(made.ok()) << made.status();
  struct stat st {};
  ASSERT_EQ(stat(P("a/b/c").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // The descriptor is the directory made.
  ASSERT_EQ(mkdirat(made->get(), "d", 0700), 0);
  EXPECT_TRUE(Exists("a/b/c/d"));
  // Again: existing components are fine.
  EXPECT_TRUE(MakeDirsAt(*base, "a/b/c", 0700).ok());
}

TEST_F(DirTest, OpenBeneathFollowsSymlinksOnlyWhileTheyStayInTheTree) {
  ASSERT_EQ(mkdir(P("outside").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("tree").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("tree/in").c_str(), 0755), 0);
  ASSERT_EQ(symlink("in", P("tree/near").c_str()), 0);
  ASSERT_EQ(symlink(P("outside").c_str(), P("tree/far").c_str()), 0);
  auto tree = DirFd::Open(P("tree"));
  ASSERT_TRUE(tree.ok());
  constexpr uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  EXPECT_TRUE(OpenBeneath(tree->get(), "near", O_PATH, kBeneath).fd.valid());
  EXPECT_TRUE(OpenBeneath(tree->get(), "", O_PATH, kBeneath).fd.valid());
  const OpenedBeneath far = OpenBeneath(tree->get(), "far", O_PATH, kBeneath);
  EXPECT_FALSE(far.fd.valid());
  EXPECT_EQ(far.error, EXDEV);
  EXPECT_EQ(OpenBeneath(tree->get(), "../outside", O_PATH, kBeneath).error, EXDEV);
  EXPECT_EQ(OpenBeneath(tree->get(), "missing", O_PATH, kBeneath).error, ENOENT);
  EXPECT_EQ(OpenBeneath(tree->get(), "near", O_PATH, kBeneath | RESOLVE_NO_SYMLINKS).error, ELOOP);
  const OpenedBeneath dir = OpenBeneath(tree->get(), "in", O_RDONLY | O_DIRECTORY, kBeneath);
  ASSERT_TRUE(dir.fd.valid());
  EXPECT_NE(fcntl(dir.fd.get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST_F(DirTest, MakeDirsAtNeverFollowsASymlinkBelowTheBase) {
  ASSERT_EQ(mkdir(P("outside").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("tree").c_str(), 0755), 0);
  ASSERT_EQ(symlink(P("outside").c_str(), P("tree/link").c_str()), 0);
  auto base = DirFd::Open(P("tree"));
  ASSERT_TRUE(base.ok());
  EXPECT_FALSE(MakeDirsAt(*base, "link/x", 0700).ok());
  EXPECT_FALSE(MakeDirsAt(*base, "link", 0700).ok());
  EXPECT_FALSE(Exists("outside/x"));
  EXPECT_FALSE(MakeDirsAt(*base, "a/../b", 0700).ok());
}

// With rootless podman the agent can leave 0000 or 0555 directories the
// developer owns in a tree only the sandbox writes.
TEST_F(DirTest, MakeOwnDirsAtMakesOwnLockedDirectoriesUsableButNeverFollows) {
  ASSERT_EQ(mkdir(P("tree").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("tree/locked").c_str(), 0755), 0);
  ASSERT_EQ(chmod(P("tree/locked").c_str(), 0), 0);
  auto base = DirFd::Open(P("tree"));
  ASSERT_TRUE(base.ok());
  auto made = MakeOwnDirsAt(*base, "locked/new", 0755);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(Exists("tree/locked/new"));
  struct stat st {};
  ASSERT_EQ(stat(P("tree/locked").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0700, 0700u);
  ASSERT_EQ(mkdir(P("outside").c_str(), 0755), 0);
  ASSERT_EQ(symlink(P("outside").c_str(), P("tree/link").c_str()), 0);
  EXPECT_FALSE(MakeOwnDirsAt(*base, "link/x", 0755).ok());
  EXPECT_FALSE(Exists("outside/x"));
}

TEST_F(DirTest, MakeDirsFollowsExistingSymlinksLikeMkdirP) {
  ASSERT_EQ(mkdir(P("real").c_str(), 0755), 0);
  ASSERT_EQ(symlink(P("real").c_str(), P("via").c_str()), 0);
  EXPECT_TRUE(MakeDirs(P("via/x/y"), 0700).ok());
  EXPECT_TRUE(Exists("real/x/y"));
  EXPECT_TRUE(MakeDirs(P("via"), 0700).ok());
  EXPECT_FALSE(MakeDirs("relative/path", 0700).ok());
}

TEST_F(DirTest, RemoveTreeAtRemovesSymlinksNotTheirTargets) {
  ASSERT_EQ(mkdir(P("outside").c_str(), 0755), 0);
  Write("outside/keep", "keep");
  ASSERT_EQ(mkdir(P("tree").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("tree/sub").c_str(), 0755), 0);
  Write("tree/sub/file", "x");
  ASSERT_EQ(symlink(P("outside").c_str(), P("tree/sub/link").c_str()), 0);
  ASSERT_EQ(symlink(P("outside/keep").c_str(), P("tree/filelink").c_str()), 0);
  auto base = DirFd::Open(base_);
  ASSERT_TRUE(base.ok());
  ASSERT_TRUE(RemoveTreeAt(*base, "tree").ok());
  EXPECT_FALSE(Exists("tree"));
  EXPECT_EQ(Slurp("outside/keep"), "keep");
  EXPECT_TRUE(RemoveTreeAt(*base, "tree").ok()) << "missing is fine";
  EXPECT_FALSE(RemoveTreeAt(*base, "../x").ok());
}

TEST_F(DirTest, RemoveTreeMakesUnreadableOwnDirectoriesRemovable) {
  ASSERT_EQ(mkdir(P("tree").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("tree/locked").c_str(), 0755), 0);
  Write("tree/locked/f", "x");
  ASSERT_EQ(chmod(P("tree/locked").c_str(), 0), 0);
  ASSERT_EQ(chmod(P("tree").c_str(), 0555), 0);
  EXPECT_TRUE(RemoveTree(P("tree")).ok());
  EXPECT_FALSE(Exists("tree"));
  EXPECT_FALSE(RemoveTree("/").ok());
  EXPECT_FALSE(RemoveTree("tree").ok());
}

TEST_F(DirTest, RemoveContentsKeepsTheDirectory) {
  ASSERT_EQ(mkdir(P("d").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("d/e").c_str(), 0755), 0);
  Write("d/e/f", "x");
  Write("d/g", "y");
  auto d = DirFd::Open(P("d"));
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(RemoveContents(*d).ok());
  EXPECT_TRUE(Exists("d"));
  auto names = ListNames(*d);
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
}

TEST_F(DirTest, ListNamesListsEveryEntryButDots) {
  Write("a", "");
  Write("b", "");
  ASSERT_EQ(mkdir(P("c").c_str(), 0755), 0);
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  auto names = ListNames(*d);
  ASSERT_TRUE(names.ok());
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(DirTest, OpenChildRefusesSymlinksAndNonComponents) {
  ASSERT_EQ(mkdir(P("real").c_str(), 0755), 0);
  ASSERT_EQ(symlink(P("real").c_str(), P("link").c_str()), 0);
  auto d = DirFd::Open(base_);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->OpenChild("real").ok());
  EXPECT_FALSE(d->OpenChild("link").ok());
  EXPECT_FALSE(d->OpenChild("real/..").ok());
  EXPECT_FALSE(DirFd::Open(P("link")).ok());
}

// The workspace is the developer's: opening a directory there changes
// nothing, not even for a 0555 directory the caller owns (B3). Only
// OpenOwnChild, for Lazaret's own trees, adds u+rwx.
TEST_F(DirTest, OpenChildNeverChangesModes) {
  ASSERT_EQ(mkdir(P("ro").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("ro/inner").c_str(), 0755), 0);
  ASSERT_EQ(chmod(P("ro/inner").c_str(), 0555), 0);
  ASSERT_EQ(chmod(P("ro").c_str(), 0555), 0);
  struct stat before {
  }, after{};
  ASSERT_EQ(lstat(P("ro").c_str(), &before), 0);
  auto base = DirFd::Open(base_);
  ASSERT_TRUE(base.ok());
  auto ro = base->OpenChild("ro");
  ASSERT_TRUE(ro.ok()) << ro.status();
  ASSERT_TRUE(ro->OpenChild("inner").ok());
  ASSERT_EQ(lstat(P("ro").c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0555u);
  EXPECT_EQ(after.st_ctim.tv_nsec, before.st_ctim.tv_nsec);
  ASSERT_EQ(lstat(P("ro/inner").c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0555u);
  // Lazaret's own trees: made removable.
  ASSERT_TRUE(base->OpenOwnChild("ro").ok());
  ASSERT_EQ(lstat(P("ro").c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0755u);
}

}  // namespace
}  // namespace lazaret::fs
