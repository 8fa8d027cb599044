#include "services/supervisor/launcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace lazaret::supervisor {
namespace {

using std::chrono::milliseconds;

TEST(LauncherWireTest, RequestsRoundTripAndAreFixedSize) {
  for (LauncherRequest r :
       {LauncherRequest::kStart, LauncherRequest::kTerminate, LauncherRequest::kKill}) {
    const std::string bytes = EncodeLauncherRequest(r);
    EXPECT_EQ(bytes.size(), kLauncherRequestSize);
    EXPECT_EQ(ParseLauncherRequest(bytes), r);
  }
}

TEST(LauncherWireTest, AnythingButAKnownRequestIsRefused) {
  for (const std::string& bad :
       std::vector<std::string>{"START\n", "start", "start\n\n", "term\n", "kill\n ", "stop \n", "",
                                "exec /bin/sh\n", std::string("start\0", 6), "kill  "}) {
    EXPECT_FALSE(ParseLauncherRequest(bad).has_value()) << bad;
  }
}

TEST(LauncherWireTest, ReportsRoundTripAndAreFixedSize) {
  for (const LauncherReport& r : std::vector<LauncherReport>{
           {LauncherReport::Kind::kStarted, 4242},
           {LauncherReport::Kind::kExited, 0},
           {LauncherReport::Kind::kExited, 9},       // killed by SIGKILL
           {LauncherReport::Kind::kExited, 0x0300},  // exited with status 3
           {LauncherReport::Kind::kFailed, 0},
       }) {
    const std::string bytes = EncodeLauncherReport(r);
    EXPECT_EQ(bytes.size(), kLauncherReportSize) << bytes;
    EXPECT_EQ(ParseLauncherReport(bytes), r) << bytes;
  }
  EXPECT_EQ(EncodeLauncherReport({LauncherReport::Kind::kStarted, 77}), "started 0000000077\n");
}

TEST(LauncherWireTest, MalformedReportsAreRefused) {
  for (const std::string& bad : std::vector<std::string>{
           "started 0000000000\n",                                                  // no pid 0
           "started -000000001\n", "started 00000000x1\n", "exited  0000070000\n",  // > 16 bits
           "failed  0000000001\n", "stopped 0000000001\n", "started 0000000077",
           "started 00000000077\n", "started 9999999999\n", "STARTED 0000000077\n"}) {
    EXPECT_FALSE(ParseLauncherReport(bad).has_value()) << bad;
  }
}

// ---- The launcher process, with a stand-in for lazaret-sessiond ----

std::string LauncherBinDir() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string exe(self, n > 0 ? n : 0);
  return exe.substr(0, exe.rfind('/'));
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

// True when `pid` is gone (or a zombie nobody reaps yet) within `timeout`.
bool GoneWithin(pid_t pid, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z') {
      return true;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

class LauncherProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-launcher-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    libexec_ = dir_ + "/libexec";
    ASSERT_EQ(mkdir(libexec_.c_str(), 0700), 0);
    // What the launcher execs: a program that runs until it is signalled and
    // records the arguments it got.
    const std::string fake = libexec_ + "/lazaret-sessiond";
    {
      std::ofstream f(fake);
      f << "#!/bin/sh\necho \"$@\" > " << dir_ << "/args\nexec sleep 1000\n";
    }
    ASSERT_EQ(chmod(fake.c_str(), 0700), 0);
    supervisord_ = LauncherBinDir() + "/lazaret-supervisord";
    ASSERT_EQ(access(supervisord_.c_str(), X_OK), 0) << supervisord_ << " is not built";
  }

  void TearDown() override {
    launcher_.reset();
    const pid_t pid = fork();
    if (pid == 0) {
      execlp("rm", "rm", "-rf", dir_.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    waitpid(pid, nullptr, 0);
  }

  void Start() {
    auto launcher = StartLauncher(supervisord_, dir_ + "/rt", libexec_, {"PATH=/usr/bin:/bin"});
    ASSERT_TRUE(launcher.ok()) << launcher.status();
    launcher_ = *std::move(launcher);
  }

  LauncherReport ReadReport() {
    pollfd p{launcher_->report_fd(), POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 10000), 1) << "no report from the launcher";
    std::optional<LauncherReport> r = launcher_->Read();
    EXPECT_TRUE(r.has_value());
    return r.value_or(LauncherReport{});
  }

  std::string dir_, libexec_, supervisord_;
  std::unique_ptr<LauncherClient> launcher_;
};

TEST_F(LauncherProcessTest, StartsStopsAndRestartsSessiondAndReportsEachStep) {
  Start();
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kStart));
  LauncherReport started = ReadReport();
  ASSERT_EQ(started.kind, LauncherReport::Kind::kStarted);
  const pid_t first = started.value;
  EXPECT_TRUE(Alive(first));
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kTerminate));
  LauncherReport exited = ReadReport();
  ASSERT_EQ(exited.kind, LauncherReport::Kind::kExited);
  EXPECT_TRUE(WIFSIGNALED(exited.value) && WTERMSIG(exited.value) == SIGTERM) << exited.value;
  // Asked again once the exit was read: a new one.
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kStart));
  started = ReadReport();
  ASSERT_EQ(started.kind, LauncherReport::Kind::kStarted);
  EXPECT_NE(started.value, first);
  // The second one writes its arguments as it starts.
  std::string line;
  for (int i = 0; i < 500 && line.empty(); ++i) {
    std::ifstream args(dir_ + "/args");
    std::getline(args, line);
    if (line.empty()) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(line, "--runtime-dir=" + dir_ + "/rt --libexec-dir=" + libexec_);
  // Closing the request pipe ends sessiond, then the launcher.
  const pid_t second = started.value;
  launcher_->Finish(milliseconds(10000));
  EXPECT_TRUE(GoneWithin(second, milliseconds(5000)));
}

TEST_F(LauncherProcessTest, SessiondDiesWithTheLauncher) {
  Start();
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kStart));
  const LauncherReport started = ReadReport();
  ASSERT_EQ(started.kind, LauncherReport::Kind::kStarted);
  ASSERT_EQ(kill(launcher_->pid(), SIGKILL), 0);
  EXPECT_TRUE(GoneWithin(started.value, milliseconds(5000)));
  // The report pipe says the launcher is gone.
  EXPECT_FALSE(launcher_->Read().has_value());
}

TEST_F(LauncherProcessTest, AStartWhileSessiondRunsEndsBoth) {
  Start();
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kStart));
  const LauncherReport started = ReadReport();
  ASSERT_EQ(started.kind, LauncherReport::Kind::kStarted);
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kStart));
  EXPECT_FALSE(launcher_->Read().has_value());
  EXPECT_TRUE(GoneWithin(started.value, milliseconds(40000)));
  EXPECT_TRUE(GoneWithin(launcher_->pid(), milliseconds(5000)));
}

TEST_F(LauncherProcessTest, SignalsWithNothingRunningAreNoOps) {
  Start();
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kKill));
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kTerminate));
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kStart));
  const LauncherReport started = ReadReport();
  EXPECT_EQ(started.kind, LauncherReport::Kind::kStarted);
  ASSERT_TRUE(launcher_->Send(LauncherRequest::kKill));
  const LauncherReport exited = ReadReport();
  ASSERT_EQ(exited.kind, LauncherReport::Kind::kExited);
  EXPECT_TRUE(WIFSIGNALED(exited.value) && WTERMSIG(exited.value) == SIGKILL);
}

TEST_F(LauncherProcessTest, RefusesToStartWithoutSessiond) {
  ASSERT_EQ(unlink((libexec_ + "/lazaret-sessiond").c_str()), 0);
  Start();
  // The launcher stops at once: its report pipe reaches EOF.
  EXPECT_FALSE(launcher_->Read().has_value());
  EXPECT_TRUE(GoneWithin(launcher_->pid(), milliseconds(5000)));
}

}  // namespace
}  // namespace lazaret::supervisor
