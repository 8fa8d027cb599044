#include "services/sessiond/session/mounts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::cli::session {
namespace {

using ::testing::ElementsAre;

TEST(PersistentDirsTest, BindsEachOverlaysMergedDirectory) {
  google::protobuf::RepeatedPtrField<std::string> dirs;
  dirs.Add("/usr");
  dirs.Add("/root/.cache");
  dirs.Add("/opt/tool dir");
  auto m = PlanPersistentDirs("/data/p1", dirs);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 3u);
  EXPECT_EQ((*m)[0].host, "/data/p1/usr_merged");
  EXPECT_EQ((*m)[0].container, "/usr");
  EXPECT_FALSE((*m)[0].read_only);
  EXPECT_TRUE((*m)[0].selinux_shared);
  EXPECT_EQ((*m)[1].host, "/data/p1/root%2F.cache_merged");
  EXPECT_EQ((*m)[2].host, "/data/p1/opt%2Ftool%20dir_merged");
}

TEST(PersistentDirsTest, SystemDirectoriesMayPersist) {
  google::protobuf::RepeatedPtrField<std::string> dirs;
  for (const char* d : {"/usr", "/etc", "/var", "/opt", "/root"}) dirs.Add(d);
  auto m = PlanPersistentDirs("/data/p1", dirs);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->size(), 5u);
}

TEST(PersistentDirsTest, RefusesWhatBelongsToLazaretOrTheKernel) {
  for (const char* bad : {"/", "/workspace", "/workspace/x", "/run/lazaret/git", "/proc/x", "/dev",
                          "/sys/fs", "relative", "/a/../b"}) {
    google::protobuf::RepeatedPtrField<std::string> dirs;
    dirs.Add(bad);
    EXPECT_FALSE(PlanPersistentDirs("/data/p1", dirs).ok()) << bad;
  }
}

TEST(PersistentDirsTest, RefusesNestedDirectories) {
  for (const auto& [a, b] : {std::pair{"/usr", "/usr/local"}, std::pair{"/etc/ssh", "/etc"},
                             std::pair{"/usr", "/usr"}}) {
    google::protobuf::RepeatedPtrField<std::string> dirs;
    dirs.Add(a);
    dirs.Add(b);
    auto m = PlanPersistentDirs("/data/p1", dirs);
    ASSERT_FALSE(m.ok()) << a << " " << b;
    EXPECT_THAT(m.status().message(), ::testing::HasSubstr("nest")) << a << " " << b;
  }
  google::protobuf::RepeatedPtrField<std::string> siblings;
  siblings.Add("/usr");
  siblings.Add("/usrx");
  EXPECT_TRUE(PlanPersistentDirs("/data/p1", siblings).ok());
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
