#include "services/sessiond/session/secrets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/support/test_support.h"

namespace lazaret::cli::session {
namespace {

namespace pb = ::lazaret::config::v1;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

pb::ResolvedProfile WithSecret(const std::function<void(pb::Secret*)>& set) {
  pb::ResolvedProfile p;
  p.set_name("p1");
  pb::Secret* s = p.add_secrets();
  s->set_name("anthropic");
  s->add_hosts("api.anthropic.com");
  s->set_inject(pb::SECRET_INJECTION_HEADER);
  s->set_header("x-api-key");
  s->set_sandbox_env("ANTHROPIC_API_KEY");
  set(s);
  return p;
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
}

TEST(SecretsTest, AnEnvironmentValueIsTakenWithOneNewlineRemovedAndGetsAPlaceholder) {
  auto p = WithSecret([](pb::Secret* s) { s->set_from_env("KEY"); });
  auto r = ResolveSecrets(p, {{"KEY", "sk-live-123\n"}});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->secrets().size(), 1u);
  const ResolvedSecret& s = (*r)->secrets()[0];
  EXPECT_EQ(s.value, "sk-live-123");
  EXPECT_THAT(s.placeholder, MatchesRegex("lzs-[0-9a-f]{32}"));
  EXPECT_FALSE(s.spec.has_from_command());
  EXPECT_EQ(s.spec.source_case(), pb::Secret::SOURCE_NOT_SET);
  std::vector<EnvSetting> env = PlaceholderEnv(**r);
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].name, "ANTHROPIC_API_KEY");
  EXPECT_EQ(env[0].value, s.placeholder);
  EXPECT_TRUE(env[0].secret);
  (*r)->WipeValues();
  EXPECT_TRUE((*r)->secrets()[0].value.empty());
  EXPECT_EQ((*r)->secrets()[0].placeholder, env[0].value);
}

TEST(SecretsTest, PlaceholdersDifferEachTime) {
  EXPECT_NE(NewPlaceholder(), NewPlaceholder());
  EXPECT_EQ(NewPlaceholder().size(), kPlaceholderSize);
}

TEST(SecretsTest, AnUnsetOrEmptyVariableRefusesTheStartNamingIt) {
  auto p = WithSecret([](pb::Secret* s) { s->set_from_env("KEY"); });
  for (const CallerEnvironment& env : {CallerEnvironment{}, CallerEnvironment{{"KEY", ""}}}) {
    auto r = ResolveSecrets(p, env);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("secret anthropic: $KEY"));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("not started"));
  }
}

TEST(SecretsTest, AValueWithALineBreakInsideIsRefusedAndNeverQuoted) {
  auto p = WithSecret([](pb::Secret* s) { s->set_from_env("KEY"); });
  auto r = ResolveSecrets(p, {{"KEY", "sk-abc\r\nX-Evil: 1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("control character"));
  EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr("sk-abc")));
}

TEST(SecretsTest, AFileIsReadAndAMissingOneIsAnError) {
  test::TempDir dir;
  const std::string path = dir.path() + "/key";
  WriteFile(path, "file-secret-value\r\n");
  auto p = WithSecret([&](pb::Secret* s) { s->set_from_file(path); });
  auto r = ResolveSecrets(p, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->secrets()[0].value, "file-secret-value");
  auto missing = WithSecret([&](pb::Secret* s) { s->set_from_file(dir.path() + "/none"); });
  auto m = ResolveSecrets(missing, {});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("could not be read"));
  WriteFile(path, std::string(kMaxSecretBytes + 10, 'a'));
  EXPECT_FALSE(ResolveSecrets(p, {}).ok());
}

TEST(SecretsTest, ACommandRunsOnTheCallersPathInTheCallersEnvironment) {
  test::TempDir dir;
  const std::string tool = dir.path() + "/keyring-tool";
  WriteFile(tool, "#!/bin/sh\nprintf '%s\\n' \"$KEYRING_VALUE\"\n", 0700);
  auto p = WithSecret([](pb::Secret* s) { s->mutable_from_command()->add_argv("keyring-tool"); });
  CallerEnvironment env = {{"PATH", "relative:" + dir.path() + ":/usr/bin:/bin"},
                           {"KEYRING_VALUE", "from-the-keyring"}};
  auto r = ResolveSecrets(p, env);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->secrets()[0].value, "from-the-keyring");
  // Not on that PATH: named, not found.
  env["PATH"] = "/usr/bin:/bin";
  auto missing = ResolveSecrets(p, env);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("not on the PATH"));
}

TEST(SecretsTest, AFailingCommandSaysItsStatusAndNeverItsOutput) {
  test::TempDir dir;
  const std::string tool = dir.path() + "/fails";
  WriteFile(tool, "#!/bin/sh\necho leaked-value; echo leaked-error >&2; exit 3\n", 0700);
  auto p = WithSecret([&](pb::Secret* s) { s->mutable_from_command()->add_argv(tool); });
  auto r = ResolveSecrets(p, {{"PATH", "/usr/bin:/bin"}});
  ASSERT_FALSE(r.ok());
  const std::string message(r.status().message());
  EXPECT_THAT(message, HasSubstr("exited with status 3"));
  EXPECT_THAT(message, Not(HasSubstr("leaked")));
  const std::string empty = dir.path() + "/empty";
  WriteFile(empty, "#!/bin/sh\nexit 0\n", 0700);
  auto e = WithSecret([&](pb::Secret* s) { s->mutable_from_command()->add_argv(empty); });
  auto er = ResolveSecrets(e, {});
  ASSERT_FALSE(er.ok());
  EXPECT_THAT(std::string(er.status().message()), HasSubstr("is empty"));
}

}  // namespace
}  // namespace lazaret::cli::session
