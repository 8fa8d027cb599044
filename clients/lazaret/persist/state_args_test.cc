#include "clients/lazaret/persist/state_args.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::cli::persist {
namespace {

using ::testing::HasSubstr;

TEST(StateArgsTest, ShowDefaultsToTheDefaultProfile) {
  absl::StatusOr<StateArgs> a = ParseStateArgs({"show"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, StateArgs::Verb::kShow);
  EXPECT_EQ(a->profile, "");
  EXPECT_FALSE(a->json);
  a = ParseStateArgs({"show", "--json", "p1"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->profile, "p1");
  EXPECT_TRUE(a->json);
}

TEST(StateArgsTest, ResetNeedsTheProfile) {
  absl::StatusOr<StateArgs> a = ParseStateArgs({"reset", "p1", "/usr", "--yes"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, StateArgs::Verb::kReset);
  EXPECT_EQ(a->profile, "p1");
  EXPECT_EQ(a->directory, "/usr");
  EXPECT_TRUE(a->yes);
  a = ParseStateArgs({"reset", "p1"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->directory, "");
  EXPECT_FALSE(a->yes);
  EXPECT_THAT(ParseStateArgs({"reset"}).status().message(), HasSubstr("needs the PROFILE"));
}

TEST(StateArgsTest, RefusesWhatItDoesNotKnow) {
  EXPECT_FALSE(ParseStateArgs({}).ok());
  EXPECT_FALSE(ParseStateArgs({"drop", "p1"}).ok());
  EXPECT_FALSE(ParseStateArgs({"show", "--yes"}).ok());
  EXPECT_FALSE(ParseStateArgs({"reset", "p1", "--json"}).ok());
  EXPECT_FALSE(ParseStateArgs({"show", "a", "b"}).ok());
  EXPECT_FALSE(ParseStateArgs({"reset", "p1", "/usr", "/etc"}).ok());
  EXPECT_THAT(ParseStateArgs({"reset", "p1", "usr"}).status().message(),
              HasSubstr("absolute path inside the sandbox"));
}

}  // namespace
}  // namespace lazaret::cli::persist
