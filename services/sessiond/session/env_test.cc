#include "services/sessiond/session/env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace lazaret::cli::session {
namespace {

namespace pb = ::lazaret::config::v1;
using ::testing::HasSubstr;

pb::ResolvedProfile ProfileWithEnv() {
  pb::ResolvedProfile p;
  p.set_name("p1");
  auto* a = p.add_env();
  a->set_name("LIT");
  a->set_literal("hello world=1");
  auto* b = p.add_env();
  b->set_name("TOKEN");
  b->set_host_var("HOST_TOKEN");
  return p;
}

TEST(ResolveProfileEnvTest, LiteralsAndHostVariablesAreSecret) {
  auto env = ResolveProfileEnv(ProfileWithEnv(), [](const std::string& n) {
    return n == "HOST_TOKEN" ? std::optional<std::string>("s3cret") : std::nullopt;
  });
  ASSERT_TRUE(env.ok()) << env.status();
  ASSERT_EQ(env->size(), 2u);
  EXPECT_EQ((*env)[0].value, "hello world=1");
  EXPECT_EQ((*env)[1].value, "s3cret");
  EXPECT_TRUE((*env)[0].secret);
  EXPECT_TRUE((*env)[1].secret);
}

TEST(ResolveProfileEnvTest, UnsetOrEmptyHostVariableIsRefusedNamingKeyAndVariable) {
  auto unset = ResolveProfileEnv(ProfileWithEnv(), [](const std::string&) { return std::nullopt; });
  ASSERT_FALSE(unset.ok());
  EXPECT_THAT(std::string(unset.status().message()), HasSubstr("profiles.p1.env.TOKEN"));
  EXPECT_THAT(std::string(unset.status().message()), HasSubstr("HOST_TOKEN is not set"));
  auto empty = ResolveProfileEnv(ProfileWithEnv(),
                                 [](const std::string&) { return std::optional<std::string>(""); });
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("HOST_TOKEN is empty"));
}

TEST(EnvFileTextTest, RefusesWhatAnEnvFileCannotCarry) {
  EXPECT_EQ(*EnvFileText({{"A", "1 2", false}, {"B", "x=y", true}}), "A=1 2\nB=x=y\n");
  EXPECT_FALSE(EnvFileText({{"A", "line1\nline2", true}}).ok());
  EXPECT_FALSE(EnvFileText({{"A", "cr\r", true}}).ok());
  EXPECT_FALSE(EnvFileText({{"1A", "x", true}}).ok());
  EXPECT_FALSE(EnvFileText({{"#A", "x", true}}).ok());
  EXPECT_FALSE(EnvFileText({{"", "x", true}}).ok());
}

}  // namespace
}  // namespace lazaret::cli::session
