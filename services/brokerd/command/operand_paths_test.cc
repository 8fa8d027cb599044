#include "services/brokerd/command/operand_paths.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "services/common/fs/test_dir.h"

namespace lazaret::brokerd::command {
namespace {

using ::testing::HasSubstr;

// ws/ is the working directory; secret sits beside it, as a host file
// outside the workspace does.
class OperandPathsTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    ScratchTest::SetUp();
    ASSERT_EQ(mkdir(P("ws").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("ws/sub").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("other").c_str(), 0755), 0);
    Write("secret", "host secret\n");
    Write("ws/notes", "plain\n");
    fd_ = open(P("ws").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    ScratchTest::TearDown();
  }
  void Link(const std::string& target, const std::string& rel) {
    ASSERT_EQ(symlink(target.c_str(), P(rel).c_str()), 0) << rel;
  }
  int fd_ = -1;
};

TEST_F(OperandPathsTest, NamesBeneathTheDirectoryOrMissingPass) {
  Link("notes", "ws/inside");
  Link("../notes", "ws/sub/up-but-inside-ws");
  for (const char* word : {"notes", "sub", "sub/", "inside", "missing", "missing/deeper",
                           "notes/not-a-dir", "12", "+%s"}) {
    EXPECT_EQ(OperandPathRefusal(fd_, word), std::nullopt) << word;
  }
}

TEST_F(OperandPathsTest, SymlinksOutOfTheDirectoryAreRefused) {
  Link(P("secret"), "ws/abs");
  Link("../secret", "ws/rel");
  Link("../other", "ws/dir");
  Link(P("other") + "/none", "ws/dangling-out");
  Link("/proc/self/root/etc/passwd", "ws/magic");
  for (const char* word : {"abs", "rel", "dir", "dir/x", "sub/../abs", "dangling-out"}) {
    const std::optional<std::string> why = OperandPathRefusal(fd_, word);
    ASSERT_TRUE(why.has_value()) << word;
    EXPECT_THAT(*why, HasSubstr("leads out of the working directory")) << word;
  }
  EXPECT_TRUE(OperandPathRefusal(fd_, "magic").has_value());
}

TEST_F(OperandPathsTest, ALoopIsRefused) {
  Link("loop2", "ws/loop1");
  Link("loop1", "ws/loop2");
  const std::optional<std::string> why = OperandPathRefusal(fd_, "loop1");
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("loop"));
}

TEST_F(OperandPathsTest, TheBoundCheckUsesItsDirectory) {
  Link(P("secret"), "ws/abs");
  const vocab::OperandPathCheck check = OperandsBeneath(fd_);
  EXPECT_TRUE(check("abs").has_value());
  EXPECT_FALSE(check("notes").has_value());
}

}  // namespace
}  // namespace lazaret::brokerd::command
