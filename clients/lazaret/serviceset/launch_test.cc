// Starting the supervisor detached: a session of its own, stdio on the log,
// only the services' environment; how its early exit is read.
#include "clients/lazaret/serviceset/launch.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace lazaret::cli::serviceset {
namespace {

class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-launch-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)!std::system(("rm -rf " + dir_).c_str()); }

  // A stand-in lazaret-supervisord running `body`.
  void FakeSupervisor(const std::string& body) {
    const std::string path = dir_ + "/lazaret-supervisord";
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ASSERT_EQ(chmod(path.c_str(), 0755), 0);
  }

  std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
};

TEST_F(LaunchTest, MissingBinarySaysHowToGetIt) {
  absl::StatusOr<SupervisorCommand> c = SupervisorCommandFor(dir_, dir_);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(c.status()));
  EXPECT_NE(c.status().message().find("LAZARET_LIBEXEC_DIR"), std::string::npos) << c.status();
}

TEST_F(LaunchTest, DetachedSupervisorHasItsOwnSessionTheLogAndOnlyTheServicesEnvironment) {
  FakeSupervisor(
      "echo \"args $*\"\n"
      "echo \"sid $(cut -d' ' -f6 /proc/$$/stat)\"\n"
      "env\n"
      "echo to-stderr >&2\n"
      "if read line; then echo \"stdin: $line\"; fi\n");
  ASSERT_EQ(setenv("LAZARET_LAUNCH_TEST_SECRET", "s3cret", 1), 0);
  absl::StatusOr<SupervisorCommand> c = SupervisorCommandFor(dir_ + "/rt", dir_);
  unsetenv("LAZARET_LAUNCH_TEST_SECRET");
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string log = dir_ + "/supervisor.log";
  absl::StatusOr<pid_t> pid = StartDetached(*c, log);
  ASSERT_TRUE(pid.ok()) << pid.status();
  const UpResult up = WaitUntilUp(dir_ + "/rt", *pid, std::chrono::seconds(30));
  EXPECT_EQ(up.outcome, UpResult::Outcome::kExited);

  const std::string text = Slurp(log);
  EXPECT_NE(text.find("args --runtime-dir=" + dir_ + "/rt --libexec-dir=" + dir_ + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sid " + std::to_string(*pid) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("to-stderr\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("stdin:"), std::string::npos) << text;
  EXPECT_EQ(text.find("LAZARET_LAUNCH_TEST_SECRET"), std::string::npos) << text;
  EXPECT_NE(text.find("PATH="), std::string::npos) << text;
  struct stat st {};
  ASSERT_EQ(stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(LaunchTest, LogThroughASymlinkIsRefused) {
  FakeSupervisor("exit 0\n");
  absl::StatusOr<SupervisorCommand> c = SupervisorCommandFor(dir_, dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(symlink((dir_ + "/elsewhere").c_str(), (dir_ + "/supervisor.log").c_str()), 0);
  EXPECT_FALSE(StartDetached(*c, dir_ + "/supervisor.log").ok());
  EXPECT_NE(access((dir_ + "/elsewhere").c_str(), F_OK), 0);
}

TEST_F(LaunchTest, ExitCodeThreeMeansAnotherUpWon) {
  FakeSupervisor("exit 3\n");
  absl::StatusOr<SupervisorCommand> c = SupervisorCommandFor(dir_, dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<pid_t> pid = StartDetached(*c, dir_ + "/supervisor.log");
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(WaitUntilUp(dir_, *pid, std::chrono::seconds(30)).outcome,
            UpResult::Outcome::kLostRace);
}

TEST_F(LaunchTest, TailOfFileKeepsTheLastLines) {
  std::ofstream(dir_ + "/log") << "1\n2\n3\n4\n";
  EXPECT_EQ(TailOfFile(dir_ + "/log", 2), "3\n4");
  EXPECT_EQ(TailOfFile(dir_ + "/log", 10), "1\n2\n3\n4");
  EXPECT_EQ(TailOfFile(dir_ + "/missing", 2), "");
}

}  // namespace
}  // namespace lazaret::cli::serviceset
