#include "helper/mount/overlay_paths.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "helper/mount/overlay_driver.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::mounthelper {
namespace {

class OverlayPathsTest : public fs::ScratchTest {
 protected:
  absl::StatusOr<CheckedOverlay> Check(const std::string& dir, bool create = true) {
    return CheckOverlay(P("data"), P("data/prof"), dir, geteuid(), create);
  }
  void SetUp() override {
    fs::ScratchTest::SetUp();
    ASSERT_EQ(mkdir(P("data").c_str(), 0700), 0);
  }
};

TEST_F(OverlayPathsTest, CreatesMissingDirectoriesPrivate) {
  absl::StatusOr<CheckedOverlay> c = Check("/usr");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->paths.changes, P("data/prof/persist/usr_changes"));
  EXPECT_EQ(c->paths.merged, P("data/prof/usr_merged"));
  for (const char* d :
       {"data/prof", "data/prof/persist", "data/prof/persist/usr_changes",
        "data/prof/persist/usr_work", "data/prof/usr_merged"}) {
    struct stat st {};
    ASSERT_EQ(lstat(P(d).c_str(), &st), 0) << d;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u) << d;
  }
}

TEST_F(OverlayPathsTest, MissingDataRootIsMadeOnAFirstRun) {
  const std::string root = P("fresh/share/lazaret");
  absl::StatusOr<CheckedOverlay> c = CheckOverlay(root, root + "/prof", "/usr", geteuid(), true);
  ASSERT_TRUE(c.ok()) << c.status();
  struct stat st {};
  ASSERT_EQ(lstat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(Exists("fresh/share/lazaret/prof/usr_merged"));
}

TEST_F(OverlayPathsTest, MissingDataRootWithoutCreateIsAnError) {
  const std::string root = P("absent");
  EXPECT_FALSE(CheckOverlay(root, root + "/prof", "/usr", geteuid(), false).ok());
  EXPECT_FALSE(Exists("absent"));
}

TEST_F(OverlayPathsTest, WithoutCreateMissingIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(Check("/usr", false).status()));
}

TEST_F(OverlayPathsTest, SymlinkedProfileDirRefused) {
  ASSERT_EQ(mkdir(P("elsewhere").c_str(), 0700), 0);
  ASSERT_EQ(symlink(P("elsewhere").c_str(), P("data/prof").c_str()), 0);
  absl::StatusOr<CheckedOverlay> c = Check("/usr");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("not a real directory"), std::string::npos) << c.status();
  EXPECT_FALSE(Exists("elsewhere/usr_changes"));
}

TEST_F(OverlayPathsTest, SymlinkedComponentRefused) {
  ASSERT_EQ(mkdir(P("data/prof").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("victim").c_str(), 0700), 0);
  for (const char* name : {"persist", "persist/usr_changes", "persist/usr_work", "usr_merged"}) {
    const std::string link = P(std::string("data/prof/") + name);
    ASSERT_EQ(symlink(P("victim").c_str(), link.c_str()), 0);
    EXPECT_FALSE(Check("/usr").ok()) << name;
    ASSERT_EQ(unlink(link.c_str()), 0);
    ASSERT_EQ(mkdir(link.c_str(), 0700), 0);
  }
  EXPECT_TRUE(Check("/usr").ok());
}

TEST_F(OverlayPathsTest, FileInPlaceOfADirectoryRefused) {
  ASSERT_EQ(mkdir(P("data/prof").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("data/prof/persist").c_str(), 0700), 0);
  Write("data/prof/persist/usr_work", "x");
  EXPECT_FALSE(Check("/usr").ok());
}

TEST_F(OverlayPathsTest, ForeignOwnerRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  ASSERT_EQ(mkdir(P("data/prof").c_str(), 0700), 0);
  ASSERT_EQ(chown(P("data/prof").c_str(), 12345, 12345), 0);
  absl::StatusOr<CheckedOverlay> c = Check("/usr");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("belongs to uid 12345"), std::string::npos);
}

// The upper layer's root is what the sandbox sees as D's root: whatever
// owner the sandbox gave it (another uid, mode 0000), it is still opened,
// so show and reset reach it.
TEST_F(OverlayPathsTest, UpperRootOfAnyOwnerAndModeIsOpened) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  ASSERT_TRUE(Check("/usr").ok());
  ASSERT_EQ(chown(P("data/prof/persist/usr_changes").c_str(), 4242, 4242), 0);
  ASSERT_EQ(chmod(P("data/prof/persist/usr_changes").c_str(), 0), 0);
  absl::StatusOr<CheckedOverlay> c = Check("/usr", false);
  EXPECT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(chown(P("data/prof/persist/usr_work").c_str(), 4242, 4242), 0);
  EXPECT_FALSE(Check("/usr", false).ok()) << "the work directory is the helper's alone";
}

struct Attrs {
  mode_t mode;
  uid_t uid;
  gid_t gid;
  time_t mtime;
};

Attrs AttrsOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return {st.st_mode & 07777, st.st_uid, st.st_gid, st.st_mtim.tv_sec};
}

TEST_F(OverlayPathsTest, UpperRootTakesTheImagesModeOwnerAndTimesUnlessTheSandboxChangedThem) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  ASSERT_EQ(mkdir(P("image").c_str(), 0700), 0);
  ASSERT_EQ(chmod(P("image").c_str(), 02755), 0);
  ASSERT_EQ(chown(P("image").c_str(), 0, 50), 0);
  const struct timespec old_times[2] = {{1577836800, 0}, {1577836800, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, P("image").c_str(), old_times, 0), 0);
  absl::StatusOr<fs::DirFd> lower = fs::DirFd::Open(P("image"));
  ASSERT_TRUE(lower.ok());
  const std::string upper = P("data/prof/persist/usr_changes");
  {
    absl::StatusOr<CheckedOverlay> c = Check("/usr");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(AttrsOf(upper).mode, 0700u);
    ASSERT_TRUE(MatchRootToLower(*lower, *c).ok());
  }
  Attrs a = AttrsOf(upper);
  EXPECT_EQ(a.mode, 02755u);
  EXPECT_EQ(a.uid, 0u);
  EXPECT_EQ(a.gid, 50u);
  EXPECT_EQ(a.mtime, 1577836800);

  // An image update: unchanged attributes follow the image.
  ASSERT_EQ(chmod(P("image").c_str(), 0775), 0);
  {
    absl::StatusOr<CheckedOverlay> c = Check("/usr", false);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(MatchRootToLower(*lower, *c).ok());
  }
  EXPECT_EQ(AttrsOf(upper).mode, 0775u);

  // The sandbox's chown/chmod of D and a new entry in it (its mtime) stay.
  ASSERT_EQ(chown(upper.c_str(), 4242, 4242), 0);
  ASSERT_EQ(chmod(upper.c_str(), 0711), 0);
  Write("data/prof/persist/usr_changes/new", "x");
  const time_t touched = AttrsOf(upper).mtime;
  {
    absl::StatusOr<CheckedOverlay> c = Check("/usr", false);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(MatchRootToLower(*lower, *c).ok());
  }
  a = AttrsOf(upper);
  EXPECT_EQ(a.mode, 0711u);
  EXPECT_EQ(a.uid, 4242u);
  EXPECT_EQ(a.mtime, touched);

  // After a reset (the record dropped) the image's are given again.
  {
    absl::StatusOr<CheckedOverlay> c = Check("/usr", false);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(RemoveRootRecord(c->profile, "usr").ok());
    ASSERT_TRUE(MatchRootToLower(*lower, *c).ok());
  }
  a = AttrsOf(upper);
  EXPECT_EQ(a.mode, 0775u);
  EXPECT_EQ(a.uid, 0u);
  EXPECT_EQ(a.gid, 50u);
  EXPECT_EQ(a.mtime, 1577836800);
}

TEST_F(OverlayPathsTest, CraftedDirectoryNamesRefused) {
  for (const std::string& d :
       {std::string(".."), std::string("%2E"), std::string("/usr/../etc"), std::string("/"),
        std::string("usr"), std::string("/usr/"), std::string("/usr//lib"), std::string("/proc"),
        std::string("/workspace/x"), std::string("/dev"), std::string("/run/lazaret"),
        std::string("/usr\0/x", 7), std::string("/") + std::string(300, 'a'),
        std::string("/") + std::string(2000, 'a')}) {
    EXPECT_FALSE(Check(d).ok()) << d;
  }
  // Names that only look odd stay inside the profile directory.
  absl::StatusOr<CheckedOverlay> c = Check("/%2E");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->paths.changes, P("data/prof/persist/%252E_changes"));
  c = Check("/..a");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->paths.changes, P("data/prof/persist/..a_changes"));
}

TEST_F(OverlayPathsTest, ProfileDirMustBeOneLevelBelowDataRoot) {
  EXPECT_FALSE(CheckOverlay(P("data"), P("data/a/b"), "/usr", geteuid(), true).ok());
  EXPECT_FALSE(CheckOverlay(P("data"), P("other"), "/usr", geteuid(), true).ok());
  EXPECT_FALSE(CheckOverlay(P("data"), P("data/.."), "/usr", geteuid(), true).ok());
  EXPECT_FALSE(CheckOverlay(P("data"), P("data"), "/usr", geteuid(), true).ok());
  EXPECT_FALSE(Exists("data/a"));
}

TEST_F(OverlayPathsTest, LowerDirNeverFollowsASymlinkInTheImage) {
  ASSERT_EQ(mkdir(P("img").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("img/usr").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("img/usr/lib").c_str(), 0700), 0);
  ASSERT_EQ(symlink("usr/lib", P("img/lib").c_str()), 0);
  ASSERT_EQ(symlink("/etc", P("img/usr/etc").c_str()), 0);
  const int root = open(P("img").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  fs::DirFd r = fs::DirFd::Adopt(root);
  const std::string id(64, 'a');
  EXPECT_TRUE(OpenLowerDir(r.get(), "/usr", id).ok());
  EXPECT_TRUE(OpenLowerDir(r.get(), "/usr/lib", id).ok());
  absl::StatusOr<fs::DirFd> lib = OpenLowerDir(r.get(), "/lib", id);
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("has no directory /lib"), std::string::npos);
  EXPECT_FALSE(OpenLowerDir(r.get(), "/usr/etc", id).ok());
  EXPECT_FALSE(OpenLowerDir(r.get(), "/opt", id).ok());
}

// The small records of a profile directory (<name>_layer, <name>_image)
// are replaced whole: a reader sees the old or the new text, never a part,
// and a symlink planted at a record's name is replaced, not followed.
TEST_F(OverlayPathsTest, RecordsAreReplacedWholeAndNeverFollowASymlink) {
  ASSERT_EQ(mkdir(P("data/prof").c_str(), 0700), 0);
  const int fd = open(P("data/prof").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  fs::DirFd prof = fs::DirFd::Adopt(fd);
  const std::string a(64, 'a');
  const std::string b(64, 'b');
  ASSERT_TRUE(WriteImageRecord(prof, "usr", a).ok());
  EXPECT_EQ(ReadImageRecord(prof, "usr"), a);
  ASSERT_TRUE(WriteImageRecord(prof, "usr", b).ok());
  EXPECT_EQ(ReadImageRecord(prof, "usr"), b);
  struct stat st {};
  ASSERT_EQ(lstat(P("data/prof/usr_image").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  Write("outside", "untouched");
  ASSERT_EQ(symlink(P("outside").c_str(), P("data/prof/etc_layer").c_str()), 0);
  ASSERT_TRUE(WriteLayerDriver(prof, "etc", OverlayDriver::kFuse).ok());
  EXPECT_EQ(Slurp("outside"), "untouched");
  ASSERT_EQ(lstat(P("data/prof/etc_layer").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  absl::StatusOr<std::optional<OverlayDriver>> d = ReadLayerDriver(prof, "etc");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, OverlayDriver::kFuse);

  // Nothing but the records is left behind.
  int entries = 0;
  DIR* dir = opendir(P("data/prof").c_str());
  ASSERT_NE(dir, nullptr);
  while (const dirent* e = readdir(dir)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++entries;
  }
  closedir(dir);
  EXPECT_EQ(entries, 2);
}

}  // namespace
}  // namespace lazaret::mounthelper
