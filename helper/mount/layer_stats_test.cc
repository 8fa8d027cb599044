#include "helper/mount/layer_stats.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::mounthelper {
namespace {

using ::testing::ElementsAre;

class LayerStatsTest : public fs::ScratchTest {
 protected:
  absl::StatusOr<LayerStats> Stat() {
    absl::StatusOr<fs::DirFd> d = fs::DirFd::Open(P("up"));
    if (!d.ok()) return d.status();
    return StatLayer(*d);
  }
};

TEST_F(LayerStatsTest, CountsChangesAndBothWhiteoutForms) {
  ASSERT_EQ(mkdir(P("up").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("up/bin").c_str(), 0700), 0);
  Write("up/bin/tool", "12345");
  Write("up/bin/.wh.old", "");
  ASSERT_EQ(symlink("/etc/shadow", P("up/link").c_str()), 0);
  ASSERT_EQ(mkdir(P("up/lib").c_str(), 0700), 0);
  Write("up/lib/.wh..wh..opq", "");
  if (geteuid() == 0) {
    ASSERT_EQ(mknod(P("up/gone").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  }
  absl::StatusOr<LayerStats> s = Stat();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->changed, ElementsAre("bin/tool", "link"));
  if (geteuid() == 0) {
    EXPECT_THAT(s->deleted, ElementsAre("bin/old", "gone"));
  } else {
    EXPECT_THAT(s->deleted, ElementsAre("bin/old"));
  }
  EXPECT_EQ(s->bytes, 5u + std::string("/etc/shadow").size());
  EXPECT_EQ(s->files, geteuid() == 0 ? 7u : 6u);
}

TEST_F(LayerStatsTest, ListsTheFirstTwentySortedAndCountsAll) {
  ASSERT_EQ(mkdir(P("up").c_str(), 0700), 0);
  for (int i = 0; i < 30; ++i) Write(absl::StrCat("up/f", 100 + i), "x");
  absl::StatusOr<LayerStats> s = Stat();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->changed_total, 30u);
  ASSERT_EQ(s->changed.size(), kMaxListedPaths);
  EXPECT_EQ(s->changed.front(), "f100");
  EXPECT_EQ(s->changed.back(), "f119");
}

TEST_F(LayerStatsTest, NeverFollowsASymlinkedDirectory) {
  ASSERT_EQ(mkdir(P("up").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(P("outside").c_str(), 0700), 0);
  Write("outside/secret", "xxxxxxxx");
  ASSERT_EQ(symlink(P("outside").c_str(), P("up/d").c_str()), 0);
  absl::StatusOr<LayerStats> s = Stat();
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(s->changed, ElementsAre("d"));
  EXPECT_EQ(s->files, 1u);
}

}  // namespace
}  // namespace lazaret::mounthelper
