#include "clients/lazaret/session/mounts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::cli::session {
namespace {

using ::testing::ElementsAre;

TEST(PersistentDirsTest, BindsAnEscapedDirectoryPerPath) {
  google::protobuf::RepeatedPtrField<std::string> dirs;
  dirs.Add("/root/.cache");
  dirs.Add("/opt/tool dir");
  auto m = PlanPersistentDirs("/data/p1", dirs);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[0].host, "/data/p1/persist/root%2F.cache");
  EXPECT_EQ((*m)[0].container, "/root/.cache");
  EXPECT_FALSE((*m)[0].read_only);
  EXPECT_EQ((*m)[1].host, "/data/p1/persist/opt%2Ftool%20dir");
}

TEST(PersistentDirsTest, RefusesPathsAnEmptyBindWouldBreak) {
  for (const char* bad : {"/usr", "/etc", "/", "/workspace", "/workspace/x", "/run/lazaret/git",
                          "/proc/x", "relative", "/a/../b"}) {
    google::protobuf::RepeatedPtrField<std::string> dirs;
    dirs.Add(bad);
    EXPECT_FALSE(PlanPersistentDirs("/data/p1", dirs).ok()) << bad;
  }
}

TEST(EscapePersistentPathTest, IsInjective) {
  EXPECT_NE(EscapePersistentPath("/a/b"), EscapePersistentPath("/a%2Fb"));
  EXPECT_NE(EscapePersistentPath("/a_b"), EscapePersistentPath("/a/b"));
}

TEST(MountArgsTest, BindAndTmpfs) {
  EXPECT_THAT(*MountArgs(BindMount{"/h/ws", "/workspace", false, true}),
              ElementsAre("--volume=/h/ws:/workspace:rw,z"));
  EXPECT_THAT(*MountArgs(BindMount{"/h/x", "/x", true, false, true}),
              ElementsAre("--volume=/h/x:/x:ro,Z"));
  EXPECT_THAT(*MountArgs(TmpfsMount{"/workspace/.git", "0755"}),
              ElementsAre("--mount=type=tmpfs,destination=/workspace/.git,tmpfs-mode=0755"));
  EXPECT_FALSE(MountArgs(BindMount{"/h/a:b", "/x", true, false}).ok());
  EXPECT_FALSE(MountArgs(BindMount{"rel", "/x", true, false}).ok());
  EXPECT_FALSE(MountArgs(BindMount{"/h", "/x/../y", true, false}).ok());
  EXPECT_FALSE(MountArgs(TmpfsMount{"/a,b", "0755"}).ok());
}

}  // namespace
}  // namespace lazaret::cli::session
