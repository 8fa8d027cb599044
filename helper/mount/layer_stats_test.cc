#include "helper/mount/layer_stats.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::mounthelper {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Runs `body` in a thread of its own that holds its capabilities as the
// helper does: the file ones permitted but not effective (and no
// DAC_READ_SEARCH at all), so that only what StatLayer and
// RemoveLayerContents raise themselves lets them past modes and owners.
// False when the capabilities could not be set so.
bool InHelperLikeThread(const std::function<void()>& body) {
  bool ok = false;
  std::thread t([&] {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2]{};
    if (syscall(SYS_capget, &hdr, d) != 0) return;
    for (int c : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN, CAP_FSETID}) {
      d[0].effective &= ~(1u << c);
    }
    d[0].permitted &= ~(1u << CAP_DAC_READ_SEARCH);
    if (syscall(SYS_capset, &hdr, d) != 0) return;
    ok = true;
    body();
  });
  t.join();
  return ok;
}

class LayerStatsTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    fs::ScratchTest::SetUp();
    ASSERT_EQ(mkdir(P("up").c_str(), 0700), 0);
  }
  absl::StatusOr<LayerStats> Stat(std::optional<OverlayDriver> driver = OverlayDriver::kKernel) {
    absl::StatusOr<fs::DirFd> d = fs::DirFd::Open(P("up"));
    if (!d.ok()) return d.status();
    return StatLayer(*d, driver);
  }
  // As the helper's `state show` calls it: compared with the image's
  // directory lo/.
  absl::StatusOr<LayerStats> StatWithLower(
      std::optional<OverlayDriver> driver = OverlayDriver::kKernel) {
    absl::StatusOr<fs::DirFd> d = fs::DirFd::Open(P("up"));
    if (!d.ok()) return d.status();
    absl::StatusOr<fs::DirFd> l = fs::DirFd::Open(P("lo"));
    if (!l.ok()) return l.status();
    return StatLayer(*d, driver, &*l);
  }
  // The directory `rel` in both the image (lo/) and the upper layer (up/),
  // as a copy-up leaves it: the same mode, owner, group and xattrs.
  void BothDirs(const std::string& rel, mode_t mode = 0755) {
    for (const char* side : {"lo/", "up/"}) {
      ASSERT_EQ(mkdir(P(side + rel).c_str(), mode), 0) << side << rel;
      ASSERT_EQ(chmod(P(side + rel).c_str(), mode), 0);
    }
  }
  absl::Status Remove() {
    absl::StatusOr<fs::DirFd> d = fs::DirFd::Open(P("up"));
    if (!d.ok()) return d.status();
    return RemoveLayerContents(*d);
  }
  bool Empty() {
    absl::StatusOr<fs::DirFd> d = fs::DirFd::Open(P("up"));
    absl::StatusOr<std::vector<std::string>> names = fs::ListNames(*d);
    return names.ok() && names->empty();
  }
  // `depth` nested directories "d" below up/, each holding the file "f"
  // and, when `siblings`, a directory "s" with the file "g"; returns how
  // many files it made.
  int Chain(int depth, bool siblings) {
    int dir = open(P("up").c_str(), O_RDONLY | O_DIRECTORY);
    int files = 0;
    for (int i = 0; i < depth; ++i) {
      EXPECT_EQ(mkdirat(dir, "d", 0755), 0);
      const int next = openat(dir, "d", O_RDONLY | O_DIRECTORY);
      close(dir);
      dir = next;
      close(openat(dir, "f", O_CREAT | O_WRONLY, 0644));
      ++files;
      if (siblings) {
        EXPECT_EQ(mkdirat(dir, "s", 0755), 0);
        const int s = openat(dir, "s", O_RDONLY | O_DIRECTORY);
        close(openat(s, "g", O_CREAT | O_WRONLY, 0644));
        close(s);
        ++files;
      }
    }
    close(dir);
    return files;
  }
};

bool IsRoot() { return geteuid() == 0; }

// The kernel's overlayfs: only a 0/0 character device is a whiteout; a
// regular file named .wh.X is a file the sandbox made, listed as itself.
TEST_F(LayerStatsTest, KernelLayerWhiteoutsAreCharacterDevicesOnly) {
  if (!IsRoot()) GTEST_SKIP() << "needs root for mknod";
  ASSERT_EQ(mkdir(P("up/bin").c_str(), 0700), 0);
  Write("up/bin/tool", "12345");
  Write("up/bin/.wh.git", "");
  ASSERT_EQ(symlink("/etc/shadow", P("up/link").c_str()), 0);
  ASSERT_EQ(mknod(P("up/gone").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  ASSERT_EQ(mkdir(P("up/lib").c_str(), 0700), 0);
  Write("up/lib/x", "");
  ASSERT_EQ(setxattr(P("up/lib").c_str(), "user.overlay.opaque", "y", 1, 0), 0);
  ASSERT_EQ(mkdir(P("up/newdir").c_str(), 0700), 0);
  absl::StatusOr<LayerStats> s = Stat(OverlayDriver::kKernel);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/.wh.git", "bin/tool", "lib/x", "link", "newdir"));
  EXPECT_THAT(s->deleted, ElementsAre("gone", "lib/"));
  EXPECT_EQ(s->bytes, 5u + std::string("/etc/shadow").size());
  EXPECT_EQ(s->files, 8u);
  EXPECT_THAT(s->limit, IsEmpty());
}

// fuse-overlayfs: an entry named .wh.X deletes X, a 0/0 character device
// deletes itself, and .wh..wh..opq (in every directory it makes) is
// bookkeeping: a directory holding only that is an empty new one.
TEST_F(LayerStatsTest, FuseOverlayfsLayerReadsWhiteoutNamesAsDeletions) {
  ASSERT_EQ(mkdir(P("up/bin").c_str(), 0700), 0);
  Write("up/bin/tool", "12345");
  Write("up/bin/.wh.old", "");
  ASSERT_EQ(mkdir(P("up/lib").c_str(), 0700), 0);
  Write("up/lib/.wh..wh..opq", "");
  Write("up/lib/kept", "");
  ASSERT_EQ(mkdir(P("up/made").c_str(), 0700), 0);
  Write("up/made/.wh..wh..opq", "");
  if (IsRoot()) {
    ASSERT_EQ(mknod(P("up/gone").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  }
  absl::StatusOr<LayerStats> s = Stat(OverlayDriver::kFuse);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/tool", "lib/kept", "made"));
  if (IsRoot()) {
    EXPECT_THAT(s->deleted, ElementsAre("bin/old", "gone"));
  } else {
    EXPECT_THAT(s->deleted, ElementsAre("bin/old"));
  }
}

TEST_F(LayerStatsTest, ListsTheFirstTwentySortedAndCountsAll) {
  for (int i = 0; i < 30; ++i) Write(absl::StrCat("up/f", 129 - i), "x");
  absl::StatusOr<LayerStats> s = Stat();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->changed_total, 30u);
  ASSERT_EQ(s->changed.size(), kMaxListedPaths);
  EXPECT_EQ(s->changed.front(), "f100");
  EXPECT_EQ(s->changed.back(), "f119");
}

TEST_F(LayerStatsTest, NeverFollowsASymlinkedDirectory) {
  ASSERT_EQ(mkdir(P("outside").c_str(), 0700), 0);
  Write("outside/secret", "xxxxxxxx");
  ASSERT_EQ(symlink(P("outside").c_str(), P("up/d").c_str()), 0);
  absl::StatusOr<LayerStats> s = Stat();
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->changed, ElementsAre("d"));
  EXPECT_EQ(s->files, 1u);
  ASSERT_TRUE(Remove().ok());
  EXPECT_TRUE(Exists("outside/secret"));
}

// The poisoned-binary trick of issue 22 and its relatives: a directory
// given to another uid with mode 0711 or 0000, a file with mode 0000, a
// sticky directory with another uid's file. Show lists every file, reset
// removes them all, with no capability in effect but what they raise.
TEST_F(LayerStatsTest, ModesAndOwnersHideNothingFromShowOrReset) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to chown";
  ASSERT_EQ(mkdir(P("up/bin").c_str(), 0755), 0);
  Write("up/bin/git", "#!/bin/sh\necho poisoned\n");
  ASSERT_EQ(chown(P("up/bin/git").c_str(), 4242, 4242), 0);
  ASSERT_EQ(chown(P("up/bin").c_str(), 4242, 4242), 0);
  ASSERT_EQ(chmod(P("up/bin").c_str(), 0711), 0);
  ASSERT_EQ(mkdir(P("up/closed").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("up/closed/inner").c_str(), 0755), 0);
  Write("up/closed/inner/hidden", "x");
  ASSERT_EQ(chmod(P("up/closed/inner").c_str(), 0), 0);
  ASSERT_EQ(chmod(P("up/closed").c_str(), 0), 0);
  Write("up/nomode", "y");
  ASSERT_EQ(chmod(P("up/nomode").c_str(), 0), 0);
  ASSERT_EQ(mkdir(P("up/tmp").c_str(), 01777), 0);
  Write("up/tmp/theirs", "z");
  ASSERT_EQ(chown(P("up/tmp/theirs").c_str(), 4243, 4243), 0);
  ASSERT_EQ(chown(P("up/tmp").c_str(), 4244, 4244), 0);
  ASSERT_EQ(chmod(P("up/tmp").c_str(), 01555), 0);
  ASSERT_TRUE(InHelperLikeThread([&] {
    // Without the walk's own capabilities these are out of reach.
    const int closed = open(P("up/closed").c_str(), O_RDONLY | O_DIRECTORY);
    EXPECT_LT(closed, 0);
    if (closed >= 0) close(closed);
    absl::StatusOr<LayerStats> s = Stat();
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_THAT(s->changed,
                ElementsAre("bin/git", "closed/inner/hidden", "nomode", "tmp/theirs"));
    EXPECT_THAT(s->limit, IsEmpty());
    EXPECT_EQ(s->files, 8u);
    absl::Status r = Remove();
    EXPECT_TRUE(r.ok()) << r;
  }));
  EXPECT_TRUE(Empty());
}

// Deeper than the old recursion's 512 levels and than the open-directory
// budget, with a branch at every level (each visited after the walk came
// back up, so its ancestors' descriptors had to be opened again).
TEST_F(LayerStatsTest, DeepTreesAreWalkedWithFewDescriptorsAndRemoved) {
  const int files = Chain(700, /*siblings=*/true);
  absl::StatusOr<LayerStats> s = Stat();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->limit, IsEmpty());
  EXPECT_EQ(s->changed_total, static_cast<uint64_t>(files));
  EXPECT_EQ(s->files, 700u * 4);
  ASSERT_TRUE(Remove().ok());
  EXPECT_TRUE(Empty());
}

// Past kMaxStatDepth show says so (never "no changes"); reset removes the
// whole tree anyway.
TEST_F(LayerStatsTest, BeyondTheDepthLimitShowReportsItAndResetStillRemovesAll) {
  Chain(kMaxStatDepth + 50, /*siblings=*/false);
  absl::StatusOr<LayerStats> s = Stat();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->limit, HasSubstr(absl::StrCat("deeper than ", kMaxStatDepth)));
  EXPECT_EQ(s->changed_total, static_cast<uint64_t>(kMaxStatDepth));
  absl::Status r = Remove();
  ASSERT_TRUE(r.ok()) << r;
  EXPECT_TRUE(Empty());
}

// Names the reset gives the directories it moves up are the sandbox's to
// use too: nothing of theirs is overwritten or left behind.
TEST_F(LayerStatsTest, ResetMovesDeepDirectoriesUpWithoutClobberingAnything) {
  ASSERT_EQ(mkdir(P("up/.lazaret-reset-0").c_str(), 0700), 0);
  Write("up/.lazaret-reset-1", "mine");
  Chain(200, false);
  ASSERT_TRUE(Remove().ok());
  EXPECT_TRUE(Empty());
}

// A POSIX ACL as the kernel stores it in system.posix_acl_*: version 2,
// then (tag, perm, id) entries sorted by tag; this one grants `uid` rwx.
std::string AclGranting(uint32_t uid) {
  std::string out;
  const auto u16 = [&out](uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); };
  const auto u32 = [&out](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  u32(2);
  u16(0x01), u16(7), u32(UINT32_MAX);  // ACL_USER_OBJ
  u16(0x02), u16(7), u32(uid);         // ACL_USER
  u16(0x04), u16(5), u32(UINT32_MAX);  // ACL_GROUP_OBJ
  u16(0x10), u16(7), u32(UINT32_MAX);  // ACL_MASK
  u16(0x20), u16(5), u32(UINT32_MAX);  // ACL_OTHER
  return out;
}

class LayerStatsLowerTest : public LayerStatsTest {
 protected:
  void SetUp() override {
    LayerStatsTest::SetUp();
    ASSERT_EQ(mkdir(P("lo").c_str(), 0700), 0);
    // The image's /usr/local-like tree, copied up by a file written in
    // bin/ and an empty directory left behind in share/.
    BothDirs("bin");
    BothDirs("share");
    Write("lo/bin/old", "image");
    Write("up/bin/tool", "new");
  }
};

// A directory copied up with the image's attributes is no change: nothing
// is listed but the file that caused the copy-up, whatever xattrs the
// overlay drivers add for themselves.
TEST_F(LayerStatsLowerTest, ACopiedUpDirectoryIsNoChange) {
  for (const char* side : {"lo/bin", "up/bin"}) {
    ASSERT_EQ(setxattr(P(side).c_str(), "user.image", "1", 1, 0), 0);
  }
  ASSERT_EQ(setxattr(P("up/bin").c_str(), "user.overlay.impure", "y", 1, 0), 0);
  ASSERT_EQ(setxattr(P("up/share").c_str(), "user.fuseoverlayfs.origin", "x", 1, 0), 0);
  if (IsRoot()) {
    ASSERT_EQ(setxattr(P("up/bin").c_str(), "trusted.overlay.origin", "z", 1, 0), 0);
  }
  absl::StatusOr<LayerStats> s = StatWithLower();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/tool"));
  EXPECT_THAT(s->deleted, IsEmpty());
  EXPECT_THAT(s->limit, IsEmpty());
  // Without the image to compare with, the empty share/ is all it can say.
  s = Stat();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/tool", "share"));
}

// The hidden re-attribution of issue 22: bin/ handed to another uid with
// mode 0711 around a poisoned file, and share/ changed with nothing in it.
TEST_F(LayerStatsLowerTest, ListsAReattributedDirectoryWithWhatChanged) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to chown";
  ASSERT_EQ(chmod(P("up/bin").c_str(), 0711), 0);
  ASSERT_EQ(chown(P("up/bin").c_str(), 4242, -1), 0);
  ASSERT_EQ(chown(P("up/share").c_str(), -1, 4243), 0);
  absl::StatusOr<LayerStats> s = StatWithLower();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/ (mode 0755->0711, owner 0->4242)", "bin/tool",
                                      "share/ (group 0->4243)"));
  EXPECT_EQ(s->changed_total, 3u);
}

TEST_F(LayerStatsLowerTest, ListsADirectoryWhoseModeAloneChanged) {
  ASSERT_EQ(chmod(P("up/share").c_str(), 01777), 0);
  absl::StatusOr<LayerStats> s = StatWithLower();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/tool", "share/ (mode 0755->1777)"));
}

TEST_F(LayerStatsLowerTest, ListsXattrsAddedChangedAndRemoved) {
  ASSERT_EQ(setxattr(P("lo/bin").c_str(), "user.kept", "1", 1, 0), 0);
  ASSERT_EQ(setxattr(P("up/bin").c_str(), "user.kept", "2", 1, 0), 0);
  ASSERT_EQ(setxattr(P("lo/share").c_str(), "user.gone", "1", 1, 0), 0);
  ASSERT_EQ(setxattr(P("up/share").c_str(), "user.a", "1", 1, 0), 0);
  ASSERT_EQ(setxattr(P("up/share").c_str(), "user.b", "1", 1, 0), 0);
  ASSERT_EQ(setxattr(P("up/share").c_str(), "user.c", "1", 1, 0), 0);
  absl::StatusOr<LayerStats> s = StatWithLower();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/ (xattr user.kept)", "bin/tool",
                                      "share/ (xattrs user.a user.b user.c +1 more)"));
}

TEST_F(LayerStatsLowerTest, ListsAclsGiven) {
  const std::string acl = AclGranting(4242);
  ASSERT_EQ(setxattr(P("up/bin").c_str(), "system.posix_acl_access", acl.data(), acl.size(), 0), 0)
      << "no POSIX ACLs on " << base_ << ": " << strerror(errno);
  ASSERT_EQ(setxattr(P("up/share").c_str(), "system.posix_acl_default", acl.data(), acl.size(), 0),
            0);
  absl::StatusOr<LayerStats> s = StatWithLower();
  ASSERT_TRUE(s.ok()) << s.status();
  // An access ACL's mask is also the mode's group bits.
  EXPECT_THAT(s->changed,
              ElementsAre("bin/ (mode 0755->0775, ACL)", "bin/tool", "share/ (default ACL)"));
}

// The persistent directory itself, chmod'ed or chown'ed by the sandbox.
TEST_F(LayerStatsLowerTest, ListsTheDirectoryItself) {
  ASSERT_EQ(chmod(P("up").c_str(), 0711), 0);
  absl::StatusOr<LayerStats> s = StatWithLower();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("./ (mode 0700->0711)", "bin/tool"));
}

// A directory the image does not have is new: listed when empty, and
// through its content otherwise; where the image has a symlink or a file,
// a directory of that name is new too (never followed).
TEST_F(LayerStatsLowerTest, NewDirectoriesAreListedWhenEmptyOnly) {
  ASSERT_EQ(mkdir(P("up/empty").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("up/full").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("up/full/inner").c_str(), 0700), 0);
  Write("up/full/inner/f", "x");
  ASSERT_EQ(mkdir(P("outside").c_str(), 0700), 0);
  ASSERT_EQ(symlink(P("outside").c_str(), P("lo/link").c_str()), 0);
  ASSERT_EQ(mkdir(P("up/link").c_str(), 0711), 0);
  Write("lo/file", "");
  ASSERT_EQ(mkdir(P("up/file").c_str(), 0700), 0);
  Write("up/file/x", "");
  absl::StatusOr<LayerStats> s = StatWithLower();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/tool", "empty", "file/x", "full/inner/f", "link"));
  EXPECT_THAT(s->limit, IsEmpty());
}

// fuse-overlayfs: a directory holding only its opaque marker is new and
// empty; a ".wh." directory is a deletion, never compared.
TEST_F(LayerStatsLowerTest, FuseOverlayfsMarkersAreNoContent) {
  ASSERT_EQ(mkdir(P("up/made").c_str(), 0755), 0);
  Write("up/made/.wh..wh..opq", "");
  ASSERT_EQ(mkdir(P("lo/old").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("up/.wh.old").c_str(), 0700), 0);
  ASSERT_EQ(chmod(P("up/share").c_str(), 0700), 0);
  absl::StatusOr<LayerStats> s = StatWithLower(OverlayDriver::kFuse);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/tool", "made", "share/ (mode 0755->0700)"));
  EXPECT_THAT(s->deleted, ElementsAre("old"));
}

// At any depth, past the open-descriptor budget: both trees' descriptors
// are closed and opened again as the walk comes back up (a branch at every
// level), and only the re-attributed directories are listed.
TEST_F(LayerStatsLowerTest, ComparesAtAnyDepth) {
  constexpr int kDepth = 300;
  std::string rel = "bin";
  std::string deep, shallow;
  for (int i = 1; i <= kDepth; ++i) {
    rel += "/d";
    BothDirs(rel);
    BothDirs(rel + "/s");
    if (i == 20) shallow = rel + "/s";
    if (i == kDepth - 10) deep = rel;
  }
  ASSERT_EQ(chmod(P("up/" + deep).c_str(), 0700), 0);
  ASSERT_EQ(chmod(P("up/" + shallow).c_str(), 0750), 0);
  absl::StatusOr<LayerStats> s = StatWithLower();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->limit, IsEmpty());
  EXPECT_THAT(s->changed, ElementsAre(deep + "/ (mode 0755->0700)", shallow + "/ (mode 0755->0750)",
                                      "bin/tool"));
  EXPECT_EQ(s->files, 3u + 2u * kDepth);
}

}  // namespace
}  // namespace lazaret::mounthelper
