#include "services/sessiond/session/pty_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace lazaret::cli::session {
namespace {

using Clock = std::chrono::steady_clock;

// The developer's terminal, played by a second pty: the proxy gets its
// slave as stdin/stdout, the test types into and reads from its master.
class UserTerminal {
 public:
  UserTerminal() {
    master_ = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    grantpt(master_);
    unlockpt(master_);
    slave_ = open(ptsname(master_), O_RDWR | O_NOCTTY | O_CLOEXEC);
    SetSize(24, 80);
  }
  ~UserTerminal() {
    close(slave_);
    close(master_);
  }
  int slave() const { return slave_; }
  void Type(const std::string& keys) {
    ASSERT_EQ(write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  void SetSize(int rows, int cols) {
    winsize ws{};
    ws.ws_row = static_cast<unsigned short>(rows);
    ws.ws_col = static_cast<unsigned short>(cols);
    ioctl(master_, TIOCSWINSZ, &ws);
  }
  // Reads the screen's bytes until `needle` shows up (true) or `ms` pass.
  bool WaitFor(const std::string& needle, int ms = 5000) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
    while (!absl::StrContains(seen_, needle)) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      if (!ReadFor(static_cast<int>(left))) return false;
    }
    return true;
  }
  // Whatever arrives within `ms`.
  std::string Collect(int ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
    const size_t from = seen_.size();
    while (true) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || !ReadFor(static_cast<int>(left))) break;
    }
    return seen_.substr(from);
  }
  const std::string& seen() const { return seen_; }

 private:
  bool ReadFor(int ms) {
    pollfd p{master_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return false;
    char buf[65536];
    const ssize_t n = read(master_, buf, sizeof(buf));
    if (n <= 0) return false;
    seen_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int master_ = -1;
  int slave_ = -1;
  std::string seen_;
};

std::unique_ptr<PtyProxy> MakeProxy(const UserTerminal& user, size_t max_paused = 4 << 20) {
  PtyProxy::Options o;
  o.user_in = user.slave();
  o.user_out = user.slave();
  o.max_paused_bytes = max_paused;
  absl::StatusOr<std::unique_ptr<PtyProxy>> p = PtyProxy::Create(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

// An interactive bash on the proxied pty: job control needs the pty to be
// its controlling terminal.
const std::vector<std::string> kBash = {"env",  "-i",     "PS1=$ ",      "TERM=dumb",
                                        "bash", "--norc", "--noprofile", "-i"};

TEST(PtyProxyTest, BytesGoBothWaysAndTheExitCodeIsTheChilds) {
  UserTerminal user;
  auto proxy = MakeProxy(user);
  ASSERT_NE(proxy, nullptr);
  std::thread typist([&] {
    ASSERT_TRUE(user.WaitFor("ready"));
    user.Type("hello there\r");
  });
  absl::StatusOr<int> code =
      proxy->Run({"sh", "-c", "echo ready; read line; echo \"got:$line\"; exit 7"});
  typist.join();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 7);
  EXPECT_TRUE(user.WaitFor("got:hello there", 1000)) << user.seen();
}

TEST(PtyProxyTest, ChildHasThePtyAsControllingTerminal) {
  UserTerminal user;
  auto proxy = MakeProxy(user);
  ASSERT_NE(proxy, nullptr);
  absl::StatusOr<int> code = proxy->Run(
      {"sh", "-c", "tty; ps -o tty= -p $$; [ \"$(ps -o sid= -p $$)\" -eq $$ ] && echo leader"});
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  EXPECT_TRUE(user.WaitFor("leader", 1000)) << user.seen();
  EXPECT_TRUE(absl::StrContains(user.seen(), "/dev/pts/")) << user.seen();
  EXPECT_FALSE(absl::StrContains(user.seen(), "not a tty")) << user.seen();
}

TEST(PtyProxyTest, WindowSizeOnStartAndAfterResize) {
  UserTerminal user;
  user.SetSize(30, 100);
  auto proxy = MakeProxy(user);
  ASSERT_NE(proxy, nullptr);
  std::thread resizer([&] {
    ASSERT_TRUE(user.WaitFor("size1="));
    ASSERT_TRUE(user.WaitFor("\n", 1000));
    user.SetSize(40, 132);
    kill(getpid(), SIGWINCH);  // the test is not in the terminal's session
    ASSERT_TRUE(user.WaitFor("WINCH"));
    user.Type("\r");
  });
  absl::StatusOr<int> code = proxy->Run(
      {"sh", "-c",
       "trap 'echo WINCH' WINCH; echo size1=$(stty size); read x; echo size2=$(stty size)"});
  resizer.join();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_TRUE(user.WaitFor("size2=40 132", 1000)) << user.seen();
  EXPECT_TRUE(absl::StrContains(user.seen(), "size1=30 100")) << user.seen();
}

TEST(PtyProxyTest, CtrlCInterruptsTheForegroundJobNotTheProxy) {
  UserTerminal user;
  auto proxy = MakeProxy(user);
  ASSERT_NE(proxy, nullptr);
  std::thread typist([&] {
    EXPECT_TRUE(user.WaitFor("$ "));
    // The job says when it runs (in the terminal's foreground group, which
    // bash sets before exec); "fg-2" is not in the echo of what was typed.
    user.Type("sh -c 'echo fg-$((1+1)); exec sleep 20'\r");
    EXPECT_TRUE(user.WaitFor("fg-2"));
    user.Type("\x03");
    EXPECT_TRUE(user.WaitFor("^C"));
    bool echoed = false;
    for (int i = 0; i < 10 && !echoed; ++i) {
      user.Type("echo after=$?\r");
      echoed = user.WaitFor("after=", 500);
    }
    EXPECT_TRUE(user.WaitFor("after=130")) << user.seen();
    user.Type("exit 5\r");
  });
  const auto start = Clock::now();
  absl::StatusOr<int> code = proxy->Run(kBash);
  typist.join();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 5);  // the shell itself survived the Ctrl-C
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
}

TEST(PtyProxyTest, CtrlZStopsTheForegroundJob) {
  UserTerminal user;
  auto proxy = MakeProxy(user);
  ASSERT_NE(proxy, nullptr);
  std::atomic<bool> done{false};
  std::thread typist([&] {
    EXPECT_TRUE(user.WaitFor("$ "));
    user.Type("sh -c 'echo fg-$((1+1)); exec sleep 20'\r");
    EXPECT_TRUE(user.WaitFor("fg-2"));
    user.Type("\x1a");
    const bool stopped = user.WaitFor("Stopped");
    EXPECT_TRUE(stopped) << user.seen();
    // bash may flush what is typed while it takes the terminal back.
    for (int i = 0; i < 10; ++i) {
      user.Type("kill -KILL %1\r");
      if (user.WaitFor("Killed", 500)) break;
    }
    // A second exit also ends a bash that still counts a stopped job.
    while (!done.load()) {
      user.Type("exit 0\r");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  absl::StatusOr<int> code = proxy->Run(kBash);
  done = true;
  typist.join();
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  EXPECT_FALSE(absl::StrContains(user.seen(), "no job control")) << user.seen();
}

TEST(PtyProxyTest, TerminalIsRawWhileRunningAndRestoredAfter) {
  UserTerminal user;
  termios before{};
  ASSERT_EQ(tcgetattr(user.slave(), &before), 0);
  ASSERT_NE(before.c_lflag & ISIG, 0u);
  {
    auto proxy = MakeProxy(user);
    ASSERT_NE(proxy, nullptr);
    termios during{};
    ASSERT_EQ(tcgetattr(user.slave(), &during), 0);
    EXPECT_EQ(during.c_lflag & (ISIG | ICANON | ECHO), 0u);
    ASSERT_TRUE(proxy->Run({"true"}).ok());
  }
  termios after{};
  ASSERT_EQ(tcgetattr(user.slave(), &after), 0);
  EXPECT_EQ(after.c_lflag, before.c_lflag);
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  EXPECT_EQ(after.c_oflag, before.c_oflag);
}

TEST(PtyProxyTest, PauseHoldsOutputAndKeysResumeFlushesInOrder) {
  UserTerminal user;
  auto proxy = MakeProxy(user);
  ASSERT_NE(proxy, nullptr);
  proxy->Pause();
  absl::StatusOr<pid_t> pid = proxy->Start(
      {"sh", "-c",
       "i=0; while [ $i -lt 20 ]; do echo line$i; i=$((i+1)); done; read x; echo x=$x"});
  ASSERT_TRUE(pid.ok()) << pid.status();
  // Nothing reaches the screen while paused, and a key typed meanwhile is
  // the caller's to read (the inline approver's), not the child's.
  EXPECT_EQ(user.Collect(400), "");
  user.Type("k");
  pollfd p{user.slave(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  char key = 0;
  ASSERT_EQ(read(user.slave(), &key, 1), 1);
  EXPECT_EQ(key, 'k');
  proxy->Resume();
  std::string expected;
  for (int i = 0; i < 20; ++i) absl::StrAppend(&expected, "line", i, "\r\n");
  EXPECT_TRUE(user.WaitFor(expected)) << user.seen();
  user.Type("typed\r");
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  proxy->Finish();
  EXPECT_TRUE(user.WaitFor("x=typed", 1000)) << user.seen();
}

TEST(PtyProxyTest, HeldOutputIsBoundedAndTheChildWaitsInsteadOfDying) {
  UserTerminal user;
  auto proxy = MakeProxy(user, /*max_paused=*/4096);
  ASSERT_NE(proxy, nullptr);
  proxy->Pause();
  absl::StatusOr<pid_t> pid =
      proxy->Start({"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; echo; echo done"});
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int status = 0;
  EXPECT_EQ(waitpid(*pid, &status, WNOHANG), 0);  // blocked on its writes, alive
  // Resume writes what was held; the rest follows as the screen reads it.
  std::thread resume([&] { proxy->Resume(); });
  EXPECT_TRUE(user.WaitFor("done", 10000));
  resume.join();
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  proxy->Finish();
  EXPECT_EQ(std::count(user.seen().begin(), user.seen().end(), 'a'), 300000);
}

TEST(PtyProxyTest, AfterAPromptTheAgentsModesComeBackAndItsAlternateScreenIsRedrawn) {
  UserTerminal user;
  auto proxy = MakeProxy(user);
  ASSERT_NE(proxy, nullptr);
  // A full-screen program: alternate screen, application cursor keys,
  // mouse reports and paste brackets on; it says WINCH when asked to
  // redraw.
  absl::StatusOr<pid_t> pid = proxy->Start(
      {"sh", "-c",
       "trap 'echo WINCH' WINCH; printf '\\033[?1049h\\033[?1h\\033[?1000h\\033[?2004hfull'; "
       "while :; do read -r x; [ \"$x\" = q ] && break; done; printf '\\033[?1049l'; echo bye"});
  ASSERT_TRUE(pid.ok()) << pid.status();
  ASSERT_TRUE(user.WaitFor("full")) << user.seen();
  proxy->Pause();
  // The mouse and the paste brackets are off while the prompt shows.
  EXPECT_TRUE(user.WaitFor("\x1b[?1000l\x1b[?2004l")) << user.seen();
  const size_t before = user.seen().size();
  proxy->Resume();
  // Back: the alternate screen entered afresh, the modes set again, then
  // the program is told to redraw (a SIGWINCH from a resize and back).
  EXPECT_TRUE(user.WaitFor("\x1b[?1049h\x1b[?1h\x1b[?1000h\x1b[?2004h")) << user.seen();
  EXPECT_GE(user.seen().find("\x1b[?1049h\x1b[?1h", before), before);
  EXPECT_TRUE(user.WaitFor("WINCH")) << user.seen();
  user.Type("q\r");
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  proxy->Finish();
  EXPECT_TRUE(user.WaitFor("bye", 1000)) << user.seen();
  // The size is the developer's again.
  winsize ws{};
  ASSERT_EQ(ioctl(user.slave(), TIOCGWINSZ, &ws), 0);
  EXPECT_EQ(ws.ws_row, 24);
}

TEST(PtyProxyTest, APromptOverTheMainScreenAsksForNoRedraw) {
  UserTerminal user;
  auto proxy = MakeProxy(user);
  ASSERT_NE(proxy, nullptr);
  absl::StatusOr<pid_t> pid =
      proxy->Start({"sh", "-c", "trap 'echo WINCH' WINCH; echo ready; read -r x; echo got-$x"});
  ASSERT_TRUE(pid.ok()) << pid.status();
  ASSERT_TRUE(user.WaitFor("ready")) << user.seen();
  proxy->Pause();
  proxy->Resume();
  // The terminal's own main screen came back: nothing to restore or redraw.
  EXPECT_EQ(user.Collect(500), "");
  user.Type("k\r");
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  proxy->Finish();
  EXPECT_TRUE(user.WaitFor("got-k", 1000)) << user.seen();
  EXPECT_FALSE(absl::StrContains(user.seen(), "WINCH")) << user.seen();
}

TEST(PtyProxyTest, OnlyOneProxyAtATime) {
  UserTerminal user;
  auto first = MakeProxy(user);
  ASSERT_NE(first, nullptr);
  PtyProxy::Options o;
  o.user_in = user.slave();
  o.user_out = user.slave();
  EXPECT_FALSE(PtyProxy::Create(o).ok());
}

}  // namespace
}  // namespace lazaret::cli::session
