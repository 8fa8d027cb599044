#include "services/common/persist_layout.h"

#include <gtest/gtest.h>

namespace lazaret {
namespace {

TEST(PersistLayoutTest, LayersLiveInsideTheCappedFileSystemAndTheMountPointOutside) {
  const PersistPaths p = PersistPathsFor("/d/prof", "/root/.cache");
  EXPECT_EQ(p.changes, "/d/prof/persist/root%2F.cache_changes");
  EXPECT_EQ(p.work, "/d/prof/persist/root%2F.cache_work");
  EXPECT_EQ(p.merged, "/d/prof/root%2F.cache_merged");
  EXPECT_EQ(PersistImagePath("/d/prof"), "/d/prof/persist.img");
  EXPECT_EQ(PersistMountPath("/d/prof"), "/d/prof/persist");
}

TEST(PersistLayoutTest, UncappedPathsAreWhereLayersWereBeforeTheCap) {
  const PersistPaths p = UncappedPathsFor("/d/prof", "/usr");
  EXPECT_EQ(p.changes, "/d/prof/usr_changes");
  EXPECT_EQ(p.work, "/d/prof/usr_work");
  EXPECT_EQ(p.merged, PersistPathsFor("/d/prof", "/usr").merged);
}

// No persistent directory's names collide with the capped file system's.
TEST(PersistLayoutTest, NoDirectoryNamesTheImageOrItsMountPoint) {
  for (const char* d : {"/persist", "/persist.img", "/persist/x", "/p"}) {
    const PersistPaths p = PersistPathsFor("/d/prof", d);
    EXPECT_NE(p.merged, PersistImagePath("/d/prof")) << d;
    EXPECT_NE(p.merged, PersistMountPath("/d/prof")) << d;
  }
}

TEST(PersistLayoutTest, NamesAreEscaped) {
  EXPECT_EQ(PersistName("/usr"), "usr");
  EXPECT_EQ(PersistName("/a b"), "a%20b");
  EXPECT_EQ(PersistName("/."), "%2E.");
}

}  // namespace
}  // namespace lazaret
