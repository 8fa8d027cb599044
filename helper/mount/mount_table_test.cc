#include "helper/mount/mount_table.h"

#include <gtest/gtest.h>

namespace lazaret::mounthelper {
namespace {

Mounted M(const std::string& pd, const std::string& d, const std::string& image,
          std::set<std::string> holders) {
  Mounted m;
  m.profile_dir = pd;
  m.directory = d;
  m.image_id = image;
  m.holders = std::move(holders);
  return m;
}

TEST(MountTableTest, SameImageShares) {
  MountTable t;
  t.Add(M("/d/p", "/usr", "img1", {"aaaaaaaaaaaa"}));
  EXPECT_TRUE(t.CheckAttach("/d/p", "img1", "bbbbbbbbbbbb").ok());
}

TEST(MountTableTest, OtherImageWhileHeldIsRefusedNamingTheHolders) {
  MountTable t;
  t.Add(M("/d/p", "/usr", "img1", {"aaaaaaaaaaaa"}));
  absl::Status s = t.CheckAttach("/d/p", "img2", "bbbbbbbbbbbb");
  EXPECT_TRUE(absl::IsFailedPrecondition(s));
  EXPECT_NE(s.message().find("aaaaaaaaaaaa"), std::string::npos) << s;
  // Another profile is not concerned; the holder itself may re-attach.
  EXPECT_TRUE(t.CheckAttach("/d/q", "img2", "bbbbbbbbbbbb").ok());
  EXPECT_TRUE(t.CheckAttach("/d/p", "img2", "aaaaaaaaaaaa").ok());
}

TEST(MountTableTest, OtherImageWithoutHoldersIsAllowed) {
  MountTable t;
  t.Add(M("/d/p", "/usr", "img1", {}));
  EXPECT_TRUE(t.CheckAttach("/d/p", "img2", "bbbbbbbbbbbb").ok());
}

TEST(MountTableTest, DropHolderReturnsOnlyThoseLeftUnheld) {
  MountTable t;
  t.Add(M("/d/p", "/usr", "img1", {"aaaaaaaaaaaa", "bbbbbbbbbbbb"}));
  t.Add(M("/d/p", "/etc", "img1", {"aaaaaaaaaaaa"}));
  std::vector<MountTable::Key> gone = t.DropHolder("aaaaaaaaaaaa");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].second, "/etc");
  EXPECT_EQ(t.HoldersOf("/d/p"), std::set<std::string>{"bbbbbbbbbbbb"});
  EXPECT_TRUE(t.DropHolder("aaaaaaaaaaaa").empty());
  gone = t.DropHolder("bbbbbbbbbbbb");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].second, "/usr");
  EXPECT_EQ(t.Unheld().size(), 2u);
}

}  // namespace
}  // namespace lazaret::mounthelper
