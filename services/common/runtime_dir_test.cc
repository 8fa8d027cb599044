#include "services/common/runtime_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace lazaret {
namespace {

class RuntimeDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-rtdir-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override { (void)!system(("rm -rf " + base_).c_str()); }
  std::string base_;
};

TEST_F(RuntimeDirTest, CreatesMissingDirectoryWithMode0700) {
  const std::string dir = base_ + "/rt";
  ASSERT_TRUE(EnsurePrivateDir(dir).ok());
  struct stat st {};
  ASSERT_EQ(lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(RuntimeDirTest, RefusesSymlinkInPlaceOfDirectory) {
  const std::string dir = base_ + "/rt";
  ASSERT_EQ(symlink("/tmp", dir.c_str()), 0);
  auto r = EnsurePrivateDir(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a directory"), std::string::npos);
}

TEST_F(RuntimeDirTest, RefusesGroupOrWorldAccessibleDirectory) {
  const std::string dir = base_ + "/rt";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  auto r = EnsurePrivateDir(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("chmod 700"), std::string::npos);
}

TEST_F(RuntimeDirTest, RefusesRelativePath) { EXPECT_FALSE(EnsurePrivateDir("relative/dir").ok()); }

TEST(DefaultRuntimeDirTest, ExplicitOverrideWins) {
  setenv("LAZARET_RUNTIME_DIR", "/tmp/laz-explicit", 1);
  EXPECT_EQ(DefaultRuntimeDir(), "/tmp/laz-explicit");
  unsetenv("LAZARET_RUNTIME_DIR");
}

TEST(DefaultRuntimeDirTest, FallsBackToTmpPerUidWithoutXdg) {
  unsetenv("LAZARET_RUNTIME_DIR");
  const char* old = getenv("XDG_RUNTIME_DIR");
  std::string saved = old ? old : "";
  unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(DefaultRuntimeDir(), "/tmp/lazaret-" + std::to_string(geteuid()));
  if (old) setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
}

}  // namespace
}  // namespace lazaret
