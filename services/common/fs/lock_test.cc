#include "services/common/fs/lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "services/common/fs/test_dir.h"

namespace lazaret::fs {
namespace {

using LockTest = ScratchTest;

TEST_F(LockTest, ASecondNonWaitingLockerIsUnavailableUntilTheFirstEnds) {
  const std::string path = P("lock");
  EXPECT_FALSE(IsLockHeld(path)) << "no file yet";
  {
    auto first = FileLock::Acquire(path, {});
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_TRUE(IsLockHeld(path));
    LockOptions no_wait;
    no_wait.wait = false;
    auto second = FileLock::Acquire(path, no_wait);
    EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  }
  EXPECT_FALSE(IsLockHeld(path));
  EXPECT_TRUE(Exists("lock")) << "the file stays";
  LockOptions no_wait;
  no_wait.wait = false;
  EXPECT_TRUE(FileLock::Acquire(path, no_wait).ok());
}

TEST_F(LockTest, AWaitingLockerGetsTheLockWhenTheHolderExits) {
  const std::string path = P("lock");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto held = FileLock::Acquire(path, {});
    (void)!write(ready[1], "x", 1);
    usleep(200 * 1000);
    _exit(held.ok() ? 0 : 1);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_TRUE(IsLockHeld(path));
  auto mine = FileLock::Acquire(path, {});
  EXPECT_TRUE(mine.ok());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  close(ready[0]);
  close(ready[1]);
}

TEST_F(LockTest, CreateNewRefusesAnExistingFileAndSymlinksAreNeverFollowed) {
  Write("exists", "");
  LockOptions fresh;
  fresh.create_new = true;
  EXPECT_FALSE(FileLock::Acquire(P("exists"), fresh).ok());
  ASSERT_EQ(symlink(P("exists").c_str(), P("link").c_str()), 0);
  EXPECT_FALSE(FileLock::Acquire(P("link"), {}).ok());
}

}  // namespace
}  // namespace lazaret::fs
