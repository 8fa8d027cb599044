#include "clients/lazaret/config/options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazaret::cli::config {
namespace {

TEST(ConfigArgsTest, ShowTakesProfileJsonAndConfigInEitherForm) {
  absl::StatusOr<ConfigArgs> a = ParseConfigArgs(
      {"show", "--profile", "ab", "--json", "--config=/etc/lazaret.toml"}, 1, /*show=*/true);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->profile, "ab");
  EXPECT_TRUE(a->json);
  EXPECT_EQ(a->explicit_config, "/etc/lazaret.toml");

  a = ParseConfigArgs({"show", "--profile=cd", "--config", "/x.toml"}, 1, /*show=*/true);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->profile, "cd");
  EXPECT_FALSE(a->json);
  EXPECT_EQ(a->explicit_config, "/x.toml");
}

TEST(ConfigArgsTest, CheckRefusesShowOnlyOptions) {
  EXPECT_FALSE(ParseConfigArgs({"check", "--json"}, 1, /*show=*/false).ok());
  EXPECT_FALSE(ParseConfigArgs({"check", "--profile", "ab"}, 1, /*show=*/false).ok());
  EXPECT_TRUE(ParseConfigArgs({"check", "--config", "/x.toml"}, 1, /*show=*/false).ok());
}

TEST(ConfigArgsTest, AnIncompleteOrUnknownArgumentIsNamed) {
  absl::StatusOr<ConfigArgs> a = ParseConfigArgs({"show", "--profile"}, 1, /*show=*/true);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "unknown or incomplete argument '--profile'");
  a = ParseConfigArgs({"check", "extra"}, 1, /*show=*/false);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "unknown or incomplete argument 'extra'");
}

TEST(ConfigArgsTest, ARelativeConfigIsMadeAbsolute) {
  absl::StatusOr<ConfigArgs> a = ParseConfigArgs({"check", "--config", "x.toml"}, 1, false);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->explicit_config, Cwd() + "/x.toml");
  EXPECT_EQ(Absolute("/a/b"), "/a/b");
}

TEST(TrustArgsTest, DefaultsToTheWorkspaceFile) {
  absl::StatusOr<TrustArgs> a = ParseTrustArgs({});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->file, "lazaret.toml");
  EXPECT_FALSE(a->revoke);
  EXPECT_EQ(a->expected_sha256, "");
}

TEST(TrustArgsTest, TakesRevokeAHashInEitherFormAndOneFile) {
  const std::string upper(64, 'A');
  absl::StatusOr<TrustArgs> a = ParseTrustArgs({"--sha256", upper, "w/lazaret.toml"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->expected_sha256, std::string(64, 'a')) << "lowercased as given";
  EXPECT_EQ(a->file, "w/lazaret.toml");

  a = ParseTrustArgs({"--revoke", "--sha256=" + upper});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->revoke);
  EXPECT_EQ(a->expected_sha256, std::string(64, 'a'));
}

TEST(TrustArgsTest, ASecondFileOrAnUnknownOptionIsRefusedEscaped) {
  absl::StatusOr<TrustArgs> a = ParseTrustArgs({"a/lazaret.toml", "b/lazaret.toml"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "unexpected argument 'b/lazaret.toml'");
  a = ParseTrustArgs({"--force\x1b[2J"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "unexpected argument '--force\\x1b[2J'");
  EXPECT_FALSE(ParseTrustArgs({"--sha256"}).ok()) << "a flag without its value";
}

TEST(TrustArgsTest, AHashIs64LowercaseHexDigits) {
  EXPECT_TRUE(IsSha256Hex(std::string(64, '0')));
  EXPECT_TRUE(IsSha256Hex("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a')));
  EXPECT_FALSE(IsSha256Hex(std::string(65, 'a')));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'A')));
  EXPECT_FALSE(IsSha256Hex(std::string(63, 'a') + "g"));
  EXPECT_FALSE(IsSha256Hex(""));
}

}  // namespace
}  // namespace lazaret::cli::config
