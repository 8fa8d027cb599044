#include "services/brokerd/command/executor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::brokerd::command {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAreArray;

class ExecutorTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    ScratchTest::SetUp();
    ASSERT_EQ(mkdir(P("ws").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("ws/sub").c_str(), 0755), 0);
    limits_.timeout = absl::Seconds(20);
  }
  ExecResult Run(std::vector<std::string> argv, absl::string_view cwd = "") {
    absl::StatusOr<CheckedCommand> checked = CheckedCommand::Check(std::move(argv), P("ws"), cwd);
    EXPECT_TRUE(checked.ok()) << checked.status();
    if (!checked.ok()) return {};
    absl::StatusOr<std::unique_ptr<RunningCommand>> running =
        RunningCommand::Start(*checked, limits_);
    EXPECT_TRUE(running.ok()) << running.status();
    if (!running.ok()) return {};
    return (*running)->Wait();
  }
  // The live (not zombie) members of process group `pgid`, from /proc.
  static int LiveMembers(pid_t pgid) {
    int live = 0;
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return -1;
    while (struct dirent* e = readdir(proc)) {
      if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;  // pids only
      std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const size_t paren = stat.rfind(')');
      if (paren == std::string::npos) continue;
      std::istringstream fields(stat.substr(paren + 1));
      char state = 0;
      pid_t ppid = 0, pgrp = 0;
      fields >> state >> ppid >> pgrp;
      if (pgrp == pgid && state != 'Z' && state != 'X') ++live;
    }
    closedir(proc);
    return live;
  }
  // True once no live process is left in group `pgid`.
  static bool GroupGone(pid_t pgid) {
    for (int i = 0; i < 200; ++i) {
      if (LiveMembers(pgid) == 0) return true;
      usleep(10 * 1000);
    }
    return false;
  }
  ExecLimits limits_;
};

TEST_F(ExecutorTest, OutputAndExitCode) {
  const ExecResult r = Run({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.out_bytes, 4u);
  EXPECT_FALSE(r.out_truncated || r.err_truncated || r.timed_out || r.cancelled);
  EXPECT_EQ(Run({"true"}).exit_code, 0);
  EXPECT_EQ(Run({"sh", "-c", "kill -USR1 $$"}).exit_code, 128 + SIGUSR1);
}

TEST_F(ExecutorTest, KeepsOneMebibytePerStreamAndCountsTheRest) {
  const ExecResult r =
      Run({"sh", "-c", "head -c 3145728 /dev/zero; head -c 2000000 /dev/zero >&2"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), 1u << 20);
  EXPECT_TRUE(r.out_truncated);
  EXPECT_EQ(r.out_bytes, 3145728u);
  EXPECT_EQ(r.err.size(), 1u << 20);
  EXPECT_EQ(r.err_bytes, 2000000u);
  EXPECT_TRUE(r.err_truncated);
}

TEST_F(ExecutorTest, TimeoutKillsTheWholeGroup) {
  limits_.timeout = absl::Milliseconds(300);
  limits_.kill_grace = absl::Milliseconds(500);
  absl::StatusOr<CheckedCommand> c =
      CheckedCommand::Check({"sh", "-c", "sleep 100 & sleep 100"}, P("ws"), "");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::unique_ptr<RunningCommand>> running = RunningCommand::Start(*c, limits_);
  ASSERT_TRUE(running.ok()) << running.status();
  const pid_t pgid = (*running)->pgid();
  EXPECT_EQ(getpgid(pgid), pgid);
  for (int i = 0; i < 100 && LiveMembers(pgid) < 3; ++i) usleep(10 * 1000);
  EXPECT_EQ(LiveMembers(pgid), 3);  // sh and both sleeps
  const ExecResult r = (*running)->Wait();
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_LT(r.run_time, absl::Seconds(5));
  EXPECT_TRUE(GroupGone(pgid));
}

TEST_F(ExecutorTest, CommandIgnoringSigtermGetsSigkillAfterTheGrace) {
  limits_.timeout = absl::Milliseconds(200);
  limits_.kill_grace = absl::Milliseconds(300);
  const ExecResult r = Run({"sh", "-c", "trap '' TERM; sleep 100"});
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_GE(r.run_time, absl::Milliseconds(500));
  EXPECT_LT(r.run_time, absl::Seconds(5));
}

TEST_F(ExecutorTest, BackgroundChildHoldingThePipesDoesNotHoldWait) {
  limits_.linger = absl::Milliseconds(200);
  absl::StatusOr<CheckedCommand> c =
      CheckedCommand::Check({"sh", "-c", "echo started; sleep 100 &"}, P("ws"), "");
  ASSERT_TRUE(c.ok()) << c.status();
  std::unique_ptr<RunningCommand> running = *RunningCommand::Start(*c, limits_);
  const ExecResult r = running->Wait();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_LT(r.run_time, absl::Seconds(3));
  EXPECT_TRUE(GroupGone(running->pgid()));
}

TEST_F(ExecutorTest, CancelFromAnotherThreadEndsTheCommand) {
  absl::StatusOr<CheckedCommand> c = CheckedCommand::Check({"sleep", "100"}, P("ws"), "");
  ASSERT_TRUE(c.ok()) << c.status();
  std::unique_ptr<RunningCommand> running = *RunningCommand::Start(*c, limits_);
  std::thread canceller([&] {
    usleep(100 * 1000);
    running->Cancel();
  });
  const ExecResult r = running->Wait();
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_EQ(running->Wait().exit_code, r.exit_code);  // a second Wait returns the same
}

TEST_F(ExecutorTest, EnvironmentIsExactlyTheBrokersFive) {
  setenv("LAZARET_TEST_SECRET", "leak", 1);
  const ExecResult r = Run({"env"});
  unsetenv("LAZARET_TEST_SECRET");
  EXPECT_EQ(r.exit_code, 0);
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  EXPECT_THAT(lines, UnorderedElementsAreArray(BrokerEnvironment()));
  ASSERT_EQ(lines.size(), 5u);
  const std::vector<std::string> env = BrokerEnvironment();
  EXPECT_EQ(env[0], "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  EXPECT_EQ(env[4], "LANG=C.UTF-8");
  if (geteuid() == 0) {
    EXPECT_THAT(env, ::testing::Contains("HOME=/root"));
    EXPECT_THAT(env, ::testing::Contains("USER=root"));
    EXPECT_THAT(env, ::testing::Contains("LOGNAME=root"));
  }
}

TEST_F(ExecutorTest, StdinIsDevNullAndNoOtherDescriptorLeaks) {
  const int leaked = open("/dev/null", O_RDONLY);  // no O_CLOEXEC: only close_range stops it
  ASSERT_GE(leaked, 0);
  const ExecResult r =
      Run({"sh", "-c", "cat; readlink /proc/self/fd/0; ls /proc/self/fd | tr '\\n' ' '"});
  close(leaked);
  EXPECT_EQ(r.exit_code, 0);
  // sh's ls lists its own directory descriptor (3) and nothing above.
  EXPECT_EQ(r.out, "/dev/null\n0 1 2 3 ");
}

TEST_F(ExecutorTest, SignalMaskAndIgnoredSignalsAreReset) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old), 0);
  struct sigaction ign {
  }, prev{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ign, &prev), 0);
  const ExecResult r = Run({"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"});
  sigaction(SIGPIPE, &prev, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(r.out, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST_F(ExecutorTest, RunsInTheMappedWorkingDirectory) {
  const ExecResult r = Run({"pwd", "-P"}, "/workspace/sub");
  char* real = realpath(P("ws/sub").c_str(), nullptr);
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(r.out, std::string(real) + "\n");
  free(real);
}

TEST_F(ExecutorTest, ShellSyntaxInARequestNeverReachesAShell) {
  const std::string marker = P("ws/x");
  for (const std::string& text :
       {"echo hi; touch " + marker, "echo $(touch " + marker + ")", "echo `touch " + marker + "`",
        "echo a && touch " + marker, "echo a | touch " + marker}) {
    absl::StatusOr<std::vector<std::string>> argv = SplitRequestCommand(text);
    ASSERT_TRUE(argv.ok()) << argv.status();
    const ExecResult r = Run(*argv);
    EXPECT_EQ(r.out,
              absl::StrJoin(std::vector<std::string>(argv->begin() + 1, argv->end()), " ") + "\n");
    struct stat st {};
    EXPECT_NE(lstat(marker.c_str(), &st), 0) << text;
  }
}

TEST_F(ExecutorTest, ExecFailureIsAnErrorFromStart) {
  ASSERT_EQ(mkdir(P("bin").c_str(), 0755), 0);
  Write("bin/notabinary", "just text\n");
  ASSERT_EQ(chmod(P("bin/notabinary").c_str(), 0755), 0);
  absl::StatusOr<CheckedCommand> c =
      CheckedCommand::CheckWithPath({"notabinary"}, P("ws"), "", P("bin"));
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::unique_ptr<RunningCommand>> running = RunningCommand::Start(*c, limits_);
  EXPECT_FALSE(running.ok());
  EXPECT_THAT(running.status().message(), ::testing::HasSubstr("execve"));
}

TEST_F(ExecutorTest, NonPositiveTimeoutIsRefused) {
  absl::StatusOr<CheckedCommand> c = CheckedCommand::Check({"true"}, P("ws"), "");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(RunningCommand::Start(*c, ExecLimits{}).status()));
}

}  // namespace
}  // namespace lazaret::brokerd::command
