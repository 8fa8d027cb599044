#include "clients/lazaret/attach/terminal_io.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace lazaret::cli::attach {
namespace {

TEST(TerminalIoTest, DeviceAttributesAnswerIsRecognisedAmongOtherBytes) {
  EXPECT_TRUE(HasDeviceAttributesAnswer("\x1b[?62;22c"));
  EXPECT_TRUE(HasDeviceAttributesAnswer("\x1b[12;1Rkeys\x1b[?1;2c"));
  EXPECT_FALSE(HasDeviceAttributesAnswer("\x1b[?62;22"));
  EXPECT_FALSE(HasDeviceAttributesAnswer("\x1b[12;1R"));
  EXPECT_FALSE(HasDeviceAttributesAnswer("\x1b[?1049h"));
}

TEST(TerminalIoTest, LeaveSequenceSwitchesOffWhatTheAgentSet) {
  terminal::TerminalModes modes;
  EXPECT_EQ(LeaveSequence(modes, /*detaching=*/false), "");
  modes.Feed("\x1b[?1049h\x1b[?1000h\x1b[?2004h");
  const std::string leave = LeaveSequence(modes, /*detaching=*/false);
  EXPECT_NE(leave.find("\x1b[?1049l"), std::string::npos);
  EXPECT_NE(leave.find("\x1b[?1000l"), std::string::npos);
  EXPECT_NE(leave.find("\x1b[?2004l"), std::string::npos);
  EXPECT_NE(LeaveSequence(modes, /*detaching=*/true).find("\x1b[?25h"), std::string::npos);
}

// A pty stands in for the developer's terminal: what it owed the agent
// arrives before the answer to the drain's own request and is read away;
// what comes after stays for the shell.
TEST(TerminalIoTest, DrainReadsUntilTheDeviceAttributesAnswer) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  absl::StatusOr<std::unique_ptr<RawMode>> raw = RawMode::Enter(slave);
  ASSERT_TRUE(raw.ok()) << raw.status();
  // The terminal: a late cursor report, then its answer to the request.
  std::thread terminal([master] {
    char req[16];
    const ssize_t n = read(master, req, sizeof(req));
    ASSERT_EQ(std::string(req, n > 0 ? n : 0), "\x1b[c");
    const std::string answer = "\x1b[5;1R\x1b[?62;22c";
    ASSERT_EQ(write(master, answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
  });
  const auto start = std::chrono::steady_clock::now();
  DrainAnswers(slave, slave, std::chrono::milliseconds(2000));
  terminal.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  ASSERT_EQ(write(master, "x", 1), 1);
  char c = 0;
  ASSERT_EQ(read(slave, &c, 1), 1);
  EXPECT_EQ(c, 'x');
  raw->reset();
  close(slave);
  close(master);
}

TEST(TerminalIoTest, DrainGivesUpWhenTheTerminalNeverAnswers) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int devnull = open("/dev/null", O_WRONLY);
  const auto start = std::chrono::steady_clock::now();
  DrainAnswers(fds[0], devnull, std::chrono::milliseconds(100));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(90));
  EXPECT_LT(took, std::chrono::milliseconds(1000));
  close(devnull);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace lazaret::cli::attach
