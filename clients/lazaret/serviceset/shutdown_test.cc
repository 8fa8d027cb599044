// The supervisor lock tells `lazaret down` whether a supervisor still runs.
#include "clients/lazaret/serviceset/shutdown.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "services/common/constants.h"

namespace lazaret::cli::serviceset {
namespace {

TEST(ShutdownTest, LockIsHeldOnlyWhileSomeoneHoldsIt) {
  char tmpl[] = "/tmp/laz-down-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  EXPECT_FALSE(SupervisorLockHeld(dir)) << "no lock file";
  const int fd =
      open((dir + "/" + kSupervisorLockFile).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(SupervisorLockHeld(dir)) << "a lock file nobody holds";
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  EXPECT_TRUE(SupervisorLockHeld(dir));
  EXPECT_FALSE(WaitUntilStopped(dir, std::chrono::milliseconds(200)));
  close(fd);
  EXPECT_TRUE(WaitUntilStopped(dir, std::chrono::milliseconds(200)));
  (void)!std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace lazaret::cli::serviceset
