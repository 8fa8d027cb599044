#include "services/supervisor/lock_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace lazaret::supervisor {
namespace {

class LockFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lazaret-lock-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/supervisor.lock";
  }
  void TearDown() override {
    unlink(path_.c_str());
    unlink((dir_ + "/elsewhere").c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
  std::string path_;
};

TEST_F(LockFileTest, ASecondHolderIsToldWhoHoldsIt) {
  absl::StatusOr<std::unique_ptr<LockFile>> first = LockFile::Acquire(path_);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<LockFile>> second = LockFile::Acquire(path_);
  ASSERT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(second.status().message().find(std::to_string(getpid())), std::string::npos)
      << second.status();
}

TEST_F(LockFileTest, ReleasingKeepsTheFileAndFreesTheLock) {
  ASSERT_TRUE(LockFile::Acquire(path_).ok());
  struct stat st {};
  EXPECT_EQ(stat(path_.c_str(), &st), 0) << "the lock file is never removed";
  EXPECT_TRUE(LockFile::Acquire(path_).ok());
}

TEST_F(LockFileTest, ASymlinkIsNotFollowed) {
  ASSERT_EQ(symlink((dir_ + "/elsewhere").c_str(), path_.c_str()), 0);
  EXPECT_FALSE(LockFile::Acquire(path_).ok());
  struct stat st {};
  EXPECT_NE(lstat((dir_ + "/elsewhere").c_str(), &st), 0);
}

}  // namespace
}  // namespace lazaret::supervisor
