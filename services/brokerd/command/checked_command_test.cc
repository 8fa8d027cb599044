#include "services/brokerd/command/checked_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "services/common/fs/test_dir.h"

namespace lazaret::brokerd::command {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CheckedCommandTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    ScratchTest::SetUp();
    ASSERT_EQ(mkdir(P("ws").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("ws/sub").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("ws/sub/dir").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("outside").c_str(), 0755), 0);
    ws_ = P("ws");
  }
  absl::StatusOr<CheckedCommand> CheckCwd(absl::string_view cwd) {
    return CheckedCommand::Check({"true"}, ws_, cwd);
  }
  std::string ws_;
};

TEST_F(CheckedCommandTest, EmptyAndWorkspaceCwdRunInTheWorkspace) {
  for (const char* cwd : {"", "/workspace"}) {
    absl::StatusOr<CheckedCommand> c = CheckCwd(cwd);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->host_cwd(), ws_);
    EXPECT_GE(c->cwd_fd(), 0);
  }
}

TEST_F(CheckedCommandTest, SubdirectoryIsMappedIntoTheWorkspace) {
  absl::StatusOr<CheckedCommand> c = CheckCwd("/workspace/sub/dir");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host_cwd(), ws_ + "/sub/dir");
  struct stat by_fd {
  }, by_path{};
  ASSERT_EQ(fstat(c->cwd_fd(), &by_fd), 0);
  ASSERT_EQ(stat(P("ws/sub/dir").c_str(), &by_path), 0);
  EXPECT_EQ(by_fd.st_ino, by_path.st_ino);
  EXPECT_EQ(c->argv(), std::vector<std::string>{"true"});
  EXPECT_EQ(c->binary().path, ResolveCommandName("true")->path);
}

TEST_F(CheckedCommandTest, SymlinkInsideTheWorkspacePointingOutIsRefused) {
  ASSERT_EQ(symlink(P("outside").c_str(), P("ws/sub/out").c_str()), 0);
  ASSERT_EQ(symlink("dir", P("ws/sub/in").c_str()), 0);
  for (const char* cwd : {"/workspace/sub/out", "/workspace/sub/in"}) {
    absl::StatusOr<CheckedCommand> c = CheckCwd(cwd);
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << cwd;
    EXPECT_THAT(c.status().message(), HasSubstr("is not a directory of the workspace"));
  }
}

TEST_F(CheckedCommandTest, DotDotOutsideAndUncleanPathsAreRefused) {
  EXPECT_EQ(CheckCwd("/workspace/..").status().message(), "cwd must not contain '..'");
  EXPECT_EQ(CheckCwd("/workspace/sub/../../etc").status().message(), "cwd must not contain '..'");
  for (const char* cwd : {"/etc", "/", "/workspacex", "workspace", "/workspace/", "/workspace//sub",
                          "/workspace/./sub", "/run/lazaret"}) {
    EXPECT_EQ(CheckCwd(cwd).status().message(), "cwd must be /workspace or below it") << cwd;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(CheckCwd("/workspace/missing").status()));
  Write("ws/file", "x");
  EXPECT_TRUE(absl::IsInvalidArgument(CheckCwd("/workspace/file").status()));
}

TEST_F(CheckedCommandTest, ArgvIsChecked) {
  EXPECT_EQ(CheckedCommand::Check({}, ws_, "").status().message(), "the command is empty");
  EXPECT_THAT(CheckedCommand::Check({"echo", std::string("a\0b", 3)}, ws_, "").status().message(),
              HasSubstr("NUL"));
  EXPECT_THAT(CheckedCommand::Check({"echo", std::string(70000, 'a')}, ws_, "").status().message(),
              HasSubstr("more than 65536"));
  for (const char* name : {"./gh", "/usr/bin/env", "A=b", "-x"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(CheckedCommand::Check({name}, ws_, "").status())) << name;
  }
  EXPECT_TRUE(absl::IsNotFound(CheckedCommand::Check({"lazaret-nope"}, ws_, "").status()));
}

TEST(SplitRequestCommandTest, SplitsWithoutAnyExpansion) {
  EXPECT_THAT(*SplitRequestCommand("echo hi; touch /tmp/x"),
              ElementsAre("echo", "hi;", "touch", "/tmp/x"));
  EXPECT_THAT(*SplitRequestCommand("echo $(id) `id` ~ *"),
              ElementsAre("echo", "$(id)", "`id`", "~", "*"));
  EXPECT_THAT(*SplitRequestCommand("gh pr view 'a b'"), ElementsAre("gh", "pr", "view", "a b"));
}

TEST(SplitRequestCommandTest, RefusesEmptyUnterminatedAndNul) {
  EXPECT_FALSE(SplitRequestCommand("").ok());
  EXPECT_FALSE(SplitRequestCommand("   # only a comment").ok());
  EXPECT_FALSE(SplitRequestCommand("echo 'a").ok());
  EXPECT_FALSE(SplitRequestCommand(std::string("echo a\0b", 8)).ok());
}

}  // namespace
}  // namespace lazaret::brokerd::command
