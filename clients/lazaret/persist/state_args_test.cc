#include "clients/lazaret/persist/state_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::cli::persist {
namespace {

using ::testing::HasSubstr;

TEST(StateArgsTest, ShowDefaultsToTheDefaultProfile) {
  absl::StatusOr<StateArgs> a = ParseStateArgs({"show"}, "/home/u/ws");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, StateArgs::Verb::kShow);
  EXPECT_EQ(a->profile, "");
  EXPECT_FALSE(a->json);
  a = ParseStateArgs({"show", "--json", "p1"}, "/home/u/ws");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->profile, "p1");
  EXPECT_TRUE(a->json);
}

TEST(StateArgsTest, ResetNeedsTheProfile) {
  absl::StatusOr<StateArgs> a = ParseStateArgs({"reset", "p1", "/usr", "--yes"}, "/home/u/ws");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, StateArgs::Verb::kReset);
  EXPECT_EQ(a->profile, "p1");
  EXPECT_EQ(a->directory, "/usr");
  EXPECT_TRUE(a->yes);
  a = ParseStateArgs({"reset", "p1"}, "/home/u/ws");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->directory, "");
  EXPECT_FALSE(a->yes);
  EXPECT_THAT(ParseStateArgs({"reset"}, "/home/u/ws").status().message(),
              HasSubstr("needs the PROFILE"));
}

// --config as `lazaret run` takes it: FILE or =FILE, anywhere, relative
// to the current directory.
TEST(StateArgsTest, ConfigLikeRun) {
  absl::StatusOr<StateArgs> a = ParseStateArgs({"show", "--config", "alt.toml"}, "/home/u/ws");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->explicit_config, "/home/u/ws/alt.toml");
  EXPECT_EQ(a->profile, "");
  a = ParseStateArgs({"show", "p1", "--config=/etc/l.toml", "--json"}, "/home/u/ws");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->explicit_config, "/etc/l.toml");
  EXPECT_EQ(a->profile, "p1");
  a = ParseStateArgs({"reset", "--config", "../c.toml", "p1", "/usr", "--yes"}, "/home/u/ws");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->explicit_config, "/home/u/ws/../c.toml");
  EXPECT_EQ(a->profile, "p1");
  EXPECT_EQ(a->directory, "/usr");
  a = ParseStateArgs({"reset", "p1"}, "/home/u/ws");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->explicit_config, "");
  EXPECT_THAT(ParseStateArgs({"show", "--config"}, "/w").status().message(),
              HasSubstr("--config needs a FILE"));
  EXPECT_THAT(ParseStateArgs({"reset", "p1", "--config="}, "/w").status().message(),
              HasSubstr("--config needs a FILE"));
}

TEST(StateArgsTest, RefusesWhatItDoesNotKnow) {
  EXPECT_FALSE(ParseStateArgs({}, "/home/u/ws").ok());
  EXPECT_FALSE(ParseStateArgs({"drop", "p1"}, "/home/u/ws").ok());
  EXPECT_FALSE(ParseStateArgs({"show", "--yes"}, "/home/u/ws").ok());
  EXPECT_FALSE(ParseStateArgs({"reset", "p1", "--json"}, "/home/u/ws").ok());
  EXPECT_FALSE(ParseStateArgs({"show", "a", "b"}, "/home/u/ws").ok());
  EXPECT_FALSE(ParseStateArgs({"reset", "p1", "/usr", "/etc"}, "/home/u/ws").ok());
  EXPECT_THAT(ParseStateArgs({"reset", "p1", "usr"}, "/home/u/ws").status().message(),
              HasSubstr("absolute path inside the sandbox"));
}

}  // namespace
}  // namespace lazaret::cli::persist
