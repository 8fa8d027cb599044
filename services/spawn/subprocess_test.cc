// RunCaptured's bounds: the deadline kills the child's whole process group,
// output past its bound kills it too and is an error, and stdin data
// reaches the child without blocking or killing the caller. The child gets
// the environment and working directory asked for.
#include "services/spawn/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace lazaret::cli {
namespace {

using std::chrono::milliseconds;

// True once `pid` is gone (reaped by whoever inherited it), polled for up to
// `limit`.
bool WaitGone(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (kill(pid, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, comm, state;
    if (stat >> pid_field >> comm >> state && state == "Z") return true;  // exited, not reaped
    std::this_thread::yield();
  }
  return false;
}

TEST(SubprocessTest, TimeoutKillsTheWholeProcessGroup) {
  char tmpl[] = "/tmp/laz-sp-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string pid_file = std::string(tmpl) + "/pid";
  // The grandchild keeps the output pipes open and would outlive a kill of
  // the child alone.
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Captured> r =
      RunCaptured({"sh", "-c", "sleep 300 & echo $! > " + pid_file + "; wait"}, milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_LT(took, std::chrono::seconds(5));
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  ASSERT_TRUE(in >> grandchild);
  EXPECT_TRUE(WaitGone(grandchild, std::chrono::seconds(5)))
      << "the grandchild " << grandchild << " survived the timeout";
  kill(grandchild, SIGKILL);
  (void)!system((std::string("rm -rf ") + tmpl).c_str());
}

// `lazaret run` keeps SIGINT/SIGTERM/SIGHUP blocked and collects them with
// sigtimedwait; a host program it waits on under InterruptibleBySignals
// must not make a stop request wait for it, and the signal must still be
// there for the caller afterwards.
TEST(SubprocessTest, PendingTerminationSignalAbandonsAnInterruptibleChild) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigset_t old;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  // Started after the block, so it inherits it: the signal stays pending.
  std::thread sender([] {
    std::this_thread::sleep_for(milliseconds(200));
    kill(getpid(), SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Captured> r;
  {
    InterruptibleBySignals interruptible;
    r = RunCaptured({"sleep", "30"}, milliseconds(60000));
  }
  const auto took = std::chrono::steady_clock::now() - start;
  sender.join();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsCancelled(r.status())) << r.status();
  EXPECT_LT(took, std::chrono::seconds(3));
  const timespec zero{0, 0};
  EXPECT_EQ(sigtimedwait(&term, nullptr, &zero), SIGTERM) << "the signal was consumed";
  // Without the guard the same pending signal changes nothing.
  kill(getpid(), SIGTERM);
  absl::StatusOr<Captured> plain = RunCaptured({"true"}, milliseconds(10000));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->exit_code, 0);
  EXPECT_EQ(sigtimedwait(&term, nullptr, &zero), SIGTERM);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST(SubprocessTest, StdinDataReachesTheChild) {
  std::string big(1 << 20, 'x');
  big += "end";
  SpawnOptions options;
  options.timeout = std::chrono::seconds(30);
  options.stdin_data = &big;
  absl::StatusOr<Captured> r = RunCaptured({"cat"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, big);
}

TEST(SubprocessTest, ChildThatNeverReadsStdinDoesNotBlockOrKillTheCaller) {
  std::string big(8 << 20, 'x');
  SpawnOptions options;
  options.timeout = std::chrono::seconds(30);
  options.stdin_data = &big;
  absl::StatusOr<Captured> r = RunCaptured({"sh", "-c", "exit 3"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
}

TEST(SubprocessTest, OutputPastTheBoundKillsTheChildAndIsAnError) {
  SpawnOptions options;
  options.timeout = std::chrono::seconds(30);
  options.max_output_bytes = 64 << 10;
  const auto start = std::chrono::steady_clock::now();
  // `yes` never stops writing: only the bound ends it.
  absl::StatusOr<Captured> r = RunCaptured({"yes"}, options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("stdout"), std::string::npos) << r.status();

  r = RunCaptured({"sh", "-c", "head -c 1000000 /dev/zero >&2"}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("stderr"), std::string::npos) << r.status();
}

TEST(SubprocessTest, OutputUpToTheBoundIsCapturedWhole) {
  SpawnOptions options;
  options.timeout = std::chrono::seconds(30);
  options.max_output_bytes = 64 << 10;
  absl::StatusOr<Captured> r =
      RunCaptured({"sh", "-c", "head -c 65536 /dev/zero; head -c 65536 /dev/zero >&2"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out.size(), 65536u);
  EXPECT_EQ(r->err.size(), 65536u);
}

TEST(SubprocessTest, EnvironmentIsReplaced) {
  const std::vector<std::string> env = {"LAZARET_SUBPROCESS_TEST=1"};
  SpawnOptions options;
  options.timeout = std::chrono::seconds(30);
  options.env = &env;
  absl::StatusOr<Captured> r = RunCaptured({"env"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "LAZARET_SUBPROCESS_TEST=1\n");
}

TEST(SubprocessTest, RunsInTheWorkingDirectoryAsked) {
  char tmpl[] = "/tmp/laz-sp-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  char resolved[PATH_MAX];
  ASSERT_NE(realpath(tmpl, resolved), nullptr);
  SpawnOptions options;
  options.timeout = std::chrono::seconds(30);
  options.cwd = tmpl;
  absl::StatusOr<Captured> r = RunCaptured({"pwd"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, std::string(resolved) + "\n");
  options.cwd = std::string(tmpl) + "/missing";
  r = RunCaptured({"pwd"}, options);
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  rmdir(tmpl);
}

TEST(SubprocessTest, MissingProgramIsNotFound) {
  absl::StatusOr<Captured> r = RunCaptured({"lazaret-no-such-program"}, milliseconds(10000));
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_TRUE(absl::IsNotFound(RunInherited({"lazaret-no-such-program"}).status()));
}

TEST(SubprocessTest, InheritedRunReportsTheExitCode) {
  absl::StatusOr<int> rc = RunInherited({"sh", "-c", "exit 7"});
  ASSERT_TRUE(rc.ok()) << rc.status();
  EXPECT_EQ(*rc, 7);
}

TEST(SubprocessTest, AsyncCaptureCollectsTheOutput) {
  absl::StatusOr<AsyncCapture> c = AsyncCapture::Start({"sh", "-c", "echo out; echo err >&2"});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<Captured> r = c->Wait();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_FALSE(c->Wait().ok());
}

}  // namespace
}  // namespace lazaret::cli
