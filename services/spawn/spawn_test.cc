// The spawn core: exec failures come back as a clear Status, the child
// starts with the signal state, group and descriptors asked for, and an
// attached child dies with the thread that started it.
#include "services/spawn/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "services/spawn/subprocess.h"

namespace lazaret::cli {
namespace {

class SpawnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-spawn-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)!std::system(("rm -rf " + dir_).c_str()); }

  static absl::StatusOr<pid_t> Start(ChildSpec spec) {
    absl::StatusOr<PreparedChild> child = PreparedChild::Create(std::move(spec));
    if (!child.ok()) return child.status();
    return Spawn(*child);
  }

  // Waits for `pid` and returns its wait status.
  static int Reap(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }

  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // The value of a "Name:\tvalue" line of /proc/<pid>/status text.
  static std::string StatusField(const std::string& text, const std::string& name) {
    const size_t at = text.find("\n" + name + ":\t");
    if (at == std::string::npos) return "";
    const size_t start = at + name.size() + 3;
    return text.substr(start, text.find('\n', start) - start);
  }

  std::string dir_;
};

TEST_F(SpawnTest, ExecFailureIsReportedWithItsErrno) {
  // Executable, so FindProgram accepts it; execve fails with ENOENT because
  // its interpreter does not exist.
  const std::string script = dir_ + "/script";
  std::ofstream(script) << "#!/nonexistent/interpreter\n";
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  ChildSpec spec;
  spec.argv = {script};
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  ASSERT_FALSE(pid.ok());
  EXPECT_TRUE(absl::IsNotFound(pid.status())) << pid.status();
  EXPECT_NE(pid.status().message().find("starting " + script + ": execve"), std::string::npos)
      << pid.status();
  EXPECT_NE(pid.status().message().find("No such file or directory"), std::string::npos)
      << pid.status();
}

TEST_F(SpawnTest, MissingProgramIsNotFoundBeforeAnyFork) {
  ChildSpec spec;
  spec.argv = {"lazaret-no-such-program"};
  absl::StatusOr<PreparedChild> child = PreparedChild::Create(std::move(spec));
  ASSERT_FALSE(child.ok());
  EXPECT_TRUE(absl::IsNotFound(child.status())) << child.status();
  EXPECT_TRUE(absl::IsInvalidArgument(PreparedChild::Create(ChildSpec()).status()));
}

TEST_F(SpawnTest, MissingWorkingDirectoryIsNamed) {
  ChildSpec spec;
  spec.argv = {"true"};
  spec.cwd = dir_ + "/missing";
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  ASSERT_FALSE(pid.ok());
  EXPECT_TRUE(absl::IsNotFound(pid.status())) << pid.status();
  EXPECT_NE(pid.status().message().find("in " + dir_ + "/missing: changing to the working"),
            std::string::npos)
      << pid.status();
}

TEST_F(SpawnTest, ChildStartsWithEmptyMaskAndDefaultDispositions) {
  sigset_t usr1, old_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr1, &old_mask), 0);
  struct sigaction ignore {
  }, old_pipe{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &old_pipe), 0);

  const std::string out = dir_ + "/status";
  const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ChildSpec spec;
  spec.argv = {"cat", "/proc/self/status"};
  spec.stdout_fd = ChildStdio::Fd(fd);
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  close(fd);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  ASSERT_TRUE(pid.ok()) << pid.status();
  ASSERT_EQ(ExitCodeOf(Reap(*pid)), 0);

  const std::string status = Slurp(out);
  EXPECT_EQ(StatusField(status, "SigBlk"), "0000000000000000") << status;
  const unsigned long long ignored =
      std::strtoull(StatusField(status, "SigIgn").c_str(), nullptr, 16);
  EXPECT_EQ(ignored & (1ULL << (SIGPIPE - 1)), 0u) << "SIGPIPE is still ignored";
}

TEST_F(SpawnTest, StdoutAndStderrGoToOneLogFileAndStdinIsDevNull) {
  const std::string log = dir_ + "/log";
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ChildSpec spec;
  spec.argv = {"sh", "-c", "cat; echo out; echo err >&2"};
  spec.stdin_fd = ChildStdio::DevNull();
  spec.stdout_fd = ChildStdio::Fd(fd);
  spec.stderr_fd = ChildStdio::Fd(fd);
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  close(fd);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(ExitCodeOf(Reap(*pid)), 0);
  EXPECT_EQ(Slurp(log), "out\nerr\n");
}

TEST_F(SpawnTest, OnlyThePlannedStdioIsInherited) {
  // A descriptor without close-on-exec, as a shell's redirection or
  // `flock FILE lazaret up` leaves one, never reaches the program.
  const int leaked = open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 3);
  const std::string log = dir_ + "/log";
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ChildSpec spec;
  spec.argv = {"sh", "-c", "ls /proc/self/fd"};
  spec.stdin_fd = ChildStdio::DevNull();
  spec.stdout_fd = ChildStdio::Fd(fd);
  spec.stderr_fd = ChildStdio::Fd(fd);
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  close(fd);
  close(leaked);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(ExitCodeOf(Reap(*pid)), 0);
  // ls's own directory descriptor (3) is the only one above stdio.
  EXPECT_EQ(Slurp(log), "0\n1\n2\n3\n");
}

TEST_F(SpawnTest, GroupAndSessionAreAsAsked) {
  for (ChildGroup group : {ChildGroup::kCaller, ChildGroup::kOwnGroup, ChildGroup::kOwnSession}) {
    ChildSpec spec;
    spec.argv = {"sleep", "30"};
    spec.group = group;
    absl::StatusOr<pid_t> pid = Start(std::move(spec));
    ASSERT_TRUE(pid.ok()) << pid.status();
    // Spawn returns once execve succeeded, so the group is already set.
    const pid_t pgid = getpgid(*pid);
    const pid_t sid = getsid(*pid);
    kill(*pid, SIGKILL);
    Reap(*pid);
    switch (group) {
      case ChildGroup::kCaller:
        EXPECT_EQ(pgid, getpgrp());
        EXPECT_EQ(sid, getsid(0));
        break;
      case ChildGroup::kOwnGroup:
        EXPECT_EQ(pgid, *pid);
        EXPECT_EQ(sid, getsid(0));
        break;
      case ChildGroup::kOwnSession:
      case ChildGroup::kTerminalSession:  // needs a pty: pty_proxy_test.cc
        EXPECT_EQ(pgid, *pid);
        EXPECT_EQ(sid, *pid);
        break;
    }
  }
}

TEST_F(SpawnTest, AttachedChildDiesWithTheThreadThatStartedIt) {
  absl::StatusOr<pid_t> pid = absl::UnknownError("not started");
  std::thread([&] { pid = SpawnAttached({"sleep", "300"}); }).join();
  ASSERT_TRUE(pid.ok()) << pid.status();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(*pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (got == 0) {
    kill(*pid, SIGKILL);
    Reap(*pid);
    FAIL() << "the attached child outlived the thread that started it";
  }
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST_F(SpawnTest, ExtraDescriptorsReachTheirSlotsAndTheParentKeepsItsOwn) {
  // Two pipes whose write ends are planned on slots 5 and 7, the second
  // write end placed where the first must go, so the plan has to move it.
  int a[2], b[2];
  ASSERT_EQ(pipe2(a, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(b, O_CLOEXEC), 0);
  ASSERT_EQ(dup3(b[1], 40, O_CLOEXEC), 40);
  ASSERT_EQ(dup3(a[1], 41, O_CLOEXEC), 41);
  close(a[1]);
  close(b[1]);
  // Slot 40 gets what is at 41 and slot 41 what is at 40: a swap.
  ChildSpec spec;
  // (dash takes only single-digit descriptors after >&; /proc reopens the
  // pipes.)
  spec.argv = {"sh", "-c",
               "echo first > /proc/self/fd/40; echo second > /proc/self/fd/41; ls /proc/self/fd"};
  spec.extra_fds = {{40, 41}, {41, 40}};
  const std::string log = dir_ + "/log";
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  spec.stdout_fd = ChildStdio::Fd(fd);
  spec.stdin_fd = ChildStdio::DevNull();
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  close(fd);
  ASSERT_TRUE(pid.ok()) << pid.status();
  // The parent's descriptors are untouched: still open, still close-on-exec.
  EXPECT_EQ(fcntl(40, F_GETFD), FD_CLOEXEC);
  EXPECT_EQ(fcntl(41, F_GETFD), FD_CLOEXEC);
  close(40);
  close(41);
  EXPECT_EQ(ExitCodeOf(Reap(*pid)), 0);
  char buf[64] = {};
  ASSERT_GT(read(a[0], buf, sizeof(buf) - 1), 0);
  EXPECT_STREQ(buf, "first\n");
  std::memset(buf, 0, sizeof(buf));
  ASSERT_GT(read(b[0], buf, sizeof(buf) - 1), 0);
  EXPECT_STREQ(buf, "second\n");
  close(a[0]);
  close(b[0]);
  // ls's own directory descriptor (3) besides stdio and the two slots.
  EXPECT_EQ(Slurp(log), "0\n1\n2\n3\n40\n41\n");
}

TEST_F(SpawnTest, ExtraDescriptorInPlaceLosesOnlyItsCloseOnExec) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  ChildSpec spec;
  spec.argv = {"sh", "-c", "echo kept >&" + std::to_string(p[1])};
  spec.extra_fds = {{p[1], p[1]}};
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  close(p[1]);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(ExitCodeOf(Reap(*pid)), 0);
  char buf[16] = {};
  ASSERT_GT(read(p[0], buf, sizeof(buf) - 1), 0);
  close(p[0]);
  EXPECT_STREQ(buf, "kept\n");
}

TEST_F(SpawnTest, BadDescriptorPlansAreRefusedBeforeAnyFork) {
  for (std::vector<std::pair<int, int>> extra : std::vector<std::vector<std::pair<int, int>>>{
           {{1, 5}}, {{5, -1}}, {{5, 6}, {5, 7}}}) {
    ChildSpec spec;
    spec.argv = {"true"};
    spec.extra_fds = extra;
    EXPECT_TRUE(absl::IsInvalidArgument(PreparedChild::Create(std::move(spec)).status()));
  }
  ChildSpec both;
  both.argv = {"true"};
  both.cwd = "/";
  both.cwd_fd = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(PreparedChild::Create(std::move(both)).status()));
  ChildSpec relative;
  relative.argv = {"true"};
  relative.program = "bin/true";
  EXPECT_TRUE(absl::IsInvalidArgument(PreparedChild::Create(std::move(relative)).status()));
}

TEST_F(SpawnTest, FixedProgramIsRunWithoutPathLookup) {
  // A program named like one in $PATH but given as a fixed path: the fixed
  // one runs, and argv[0] is what the program sees.
  const std::string script = dir_ + "/true";
  std::ofstream(script) << "#!/bin/sh\necho \"$0\" > " << dir_ << "/ran\n";
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  ChildSpec spec;
  spec.argv = {"true"};
  spec.program = script;
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(ExitCodeOf(Reap(*pid)), 0);
  EXPECT_EQ(Slurp(dir_ + "/ran"), script + "\n");

  ChildSpec missing;
  missing.argv = {"true"};
  missing.program = dir_ + "/missing";
  absl::StatusOr<pid_t> failed = Start(std::move(missing));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("starting " + dir_ + "/missing"), std::string::npos)
      << failed.status();
}

TEST_F(SpawnTest, WorkingDirectoryCanBeAnOpenDescriptor) {
  const int dirfd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dirfd, 0);
  ChildSpec spec;
  spec.argv = {"sh", "-c", "pwd > here"};
  spec.cwd_fd = dirfd;
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  close(dirfd);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(ExitCodeOf(Reap(*pid)), 0);
  EXPECT_EQ(Slurp(dir_ + "/here"), dir_ + "\n");
}

TEST_F(SpawnTest, IgnoredSignalsAreDefaultInTheChild) {
  struct sigaction ignore {
  }, old_usr2{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGUSR2, &ignore, &old_usr2), 0);
  const std::string out = dir_ + "/status";
  const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ChildSpec spec;
  spec.argv = {"cat", "/proc/self/status"};
  spec.stdout_fd = ChildStdio::Fd(fd);
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  close(fd);
  sigaction(SIGUSR2, &old_usr2, nullptr);
  ASSERT_TRUE(pid.ok()) << pid.status();
  ASSERT_EQ(ExitCodeOf(Reap(*pid)), 0);
  const std::string status = Slurp(out);
  const unsigned long long ignored =
      std::strtoull(StatusField(status, "SigIgn").c_str(), nullptr, 16);
  EXPECT_EQ(ignored, 0u) << status;
}

TEST_F(SpawnTest, DeathSignalIsTheOneAsked) {
  absl::StatusOr<pid_t> pid = absl::UnknownError("not started");
  std::thread([&] {
    ChildSpec spec;
    spec.argv = {"sleep", "300"};
    spec.die_with_parent = true;
    spec.death_signal = SIGTERM;
    pid = Start(std::move(spec));
  }).join();
  ASSERT_TRUE(pid.ok()) << pid.status();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(*pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (got == 0) {
    kill(*pid, SIGKILL);
    Reap(*pid);
    FAIL() << "the child outlived the thread that started it";
  }
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST_F(SpawnTest, UnpermittedAmbientCapabilitiesAreLeftOut) {
  // Without privileges nothing is permitted: the program starts without
  // the capability. With CAP_SYS_ADMIN permitted (root) it is ambient.
  const std::string out = dir_ + "/status";
  const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ChildSpec spec;
  spec.argv = {"cat", "/proc/self/status"};
  spec.stdout_fd = ChildStdio::Fd(fd);
  spec.ambient_capabilities = uint64_t{1} << CAP_SYS_ADMIN;
  absl::StatusOr<pid_t> pid = Start(std::move(spec));
  close(fd);
  ASSERT_TRUE(pid.ok()) << pid.status();
  ASSERT_EQ(ExitCodeOf(Reap(*pid)), 0);
  const std::string status = Slurp(out);
  const unsigned long long ambient =
      std::strtoull(StatusField(status, "CapAmb").c_str(), nullptr, 16);
  const std::string self = Slurp("/proc/self/status");
  const unsigned long long permitted =
      std::strtoull(StatusField(self, "CapPrm").c_str(), nullptr, 16);
  EXPECT_EQ(ambient, permitted & (1ULL << CAP_SYS_ADMIN)) << status;
}

}  // namespace
}  // namespace lazaret::cli
