#include "services/sessiond/session/run_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::cli::session {
namespace {

using ::testing::ElementsAre;

TEST(ParseRunArgsTest, NoArgumentsIsTheDefaultProfileAndTheShell) {
  auto a = ParseRunArgs({}, "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->profile, "");
  EXPECT_TRUE(a->command.empty());
}

TEST(ParseRunArgsTest, DoubleDashKeepsTheDefaultProfile) {
  auto a = ParseRunArgs({"--", "sh", "-c", "exit 7"}, "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->profile, "");
  EXPECT_THAT(a->command, ElementsAre("sh", "-c", "exit 7"));
}

TEST(ParseRunArgsTest, FirstPositionalIsAlwaysTheProfile) {
  auto a = ParseRunArgs({"claude-code"}, "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->profile, "claude-code");
  EXPECT_TRUE(a->command.empty());
  auto b = ParseRunArgs({"p1", "bash", "-l"}, "/w");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->profile, "p1");
  EXPECT_THAT(b->command, ElementsAre("bash", "-l"));
  auto c = ParseRunArgs({"p1", "--", "--version"}, "/w");
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->command, ElementsAre("--version"));
}

TEST(ParseRunArgsTest, OptionsOnlyBeforeTheProfile) {
  auto a = ParseRunArgs(
      {"--config", "x.toml", "--branch=feat", "--worktree", "--dry-run", "p", "ls", "--dry-run"},
      "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->explicit_config, "/w/x.toml");
  EXPECT_EQ(a->branch, "feat");
  EXPECT_TRUE(a->worktree);
  EXPECT_TRUE(a->dry_run);
  EXPECT_EQ(a->profile, "p");
  EXPECT_THAT(a->command, ElementsAre("ls", "--dry-run"));
}

TEST(ParseRunArgsTest, UnknownOrIncompleteOptionsAreErrors) {
  EXPECT_FALSE(ParseRunArgs({"--bogus"}, "/w").ok());
  EXPECT_FALSE(ParseRunArgs({"--config"}, "/w").ok());
  EXPECT_FALSE(ParseRunArgs({"--branch="}, "/w").ok());
}

TEST(ParseRunArgsTest, ApproverIsInlineOrRemote) {
  absl::StatusOr<RunArgs> a = ParseRunArgs({"--approver=remote", "ci"}, "/w");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->approver, "remote");
  EXPECT_EQ(a->profile, "ci");
  a = ParseRunArgs({"--approver", "inline"}, "/w");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->approver, "inline");
  a = ParseRunArgs({}, "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->approver, "");
  absl::StatusOr<RunArgs> bad = ParseRunArgs({"--approver=never"}, "/w");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--approver 'never' is not an approver: inline"),
            std::string::npos)
      << bad.status();
  EXPECT_FALSE(ParseRunArgs({"--approver"}, "/w").ok());
}

TEST(ParseRunArgsTest, PortForwardsRepeatAndAreChecked) {
  absl::StatusOr<RunArgs> a =
      ParseRunArgs({"-p", "3000", "--publish=127.0.0.1:1455", "-p", "8080:3000", "ci"}, "/w");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->ports.size(), 3u);
  EXPECT_EQ(a->ports[0].host_port(), 3000u);
  EXPECT_EQ(a->ports[0].host_address(), "");
  EXPECT_EQ(a->ports[1].host_address(), "127.0.0.1");
  EXPECT_EQ(a->ports[2].sandbox_port(), 3000u);
  EXPECT_EQ(a->profile, "ci");
  absl::StatusOr<RunArgs> low = ParseRunArgs({"-p", "80"}, "/w");
  ASSERT_FALSE(low.ok());
  EXPECT_NE(low.status().message().find("below 1024"), std::string::npos) << low.status();
  EXPECT_FALSE(ParseRunArgs({"-p"}, "/w").ok());
  // After the profile, -p belongs to the command.
  a = ParseRunArgs({"ci", "-p", "3000"}, "/w");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->ports.empty());
}

}  // namespace
}  // namespace lazaret::cli::session
