// Reading the host's git config (git_config.h) with real host git.
#include "services/sessiond/workspace/git_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/sessiond/workspace/test_fixture.h"

namespace lazaret::cli::workspace {
namespace {

using lazaret::workspace::GitConfigEntry;

const GitConfigEntry* Find(const std::vector<GitConfigEntry>& entries, const std::string& key) {
  const GitConfigEntry* found = nullptr;
  for (const GitConfigEntry& e : entries) {
    if (e.key == key) found = &e;
  }
  return found;
}

TEST(GitConfigParseTest, ParsesTheZeroSeparatedListAndDropsCommandLineEntries) {
  const std::string out = std::string("file:/etc/gitconfig\0core.pager\nless -R\0", 39) +
                          std::string("file:.git/config\0core.bare\0", 27) +
                          std::string("file:/a\0alias.x\n!sh -c 'a\nb'\0", 29) +
                          std::string("command line:\0core.hookspath\n/dev/null\0", 39);
  absl::StatusOr<std::vector<GitConfigEntry>> e = ParseGitConfigList(out);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->size(), 3u);
  EXPECT_EQ((*e)[0].origin, "file:/etc/gitconfig");
  EXPECT_EQ((*e)[0].key, "core.pager");
  EXPECT_EQ((*e)[0].value, "less -R");
  EXPECT_EQ((*e)[1].key, "core.bare");
  EXPECT_EQ((*e)[1].value, "");
  EXPECT_EQ((*e)[2].value, "!sh -c 'a\nb'");
}

TEST(GitConfigParseTest, CutShortOutputIsAnError) {
  EXPECT_FALSE(ParseGitConfigList(std::string("file:/a\0core.x\nv", 16)).ok());
  EXPECT_FALSE(ParseGitConfigList("file:/a").ok());
  EXPECT_TRUE(ParseGitConfigList("").ok());
}

TEST_F(WorkspaceScanTest, HostGitConfigOfARepositoryWithAbsoluteOrigins) {
  Repo("");
  Do(absl::StrCat("cd ", Q(ws_), " && git config core.hooksPath .githooks",
                  " && git config include.path ../team.inc",
                  " && printf '[alias]\\n\\tlint = !./tools/lint.sh\\n' > team.inc",
                  " && mkdir -p sub"));
  // Asked from a subdirectory: the same config, origins made absolute.
  absl::StatusOr<HostGitConfig> config = ReadHostGitConfig(P("sub"));
  ASSERT_TRUE(config.ok()) << config.status();
  const std::vector<GitConfigEntry>& e = config->entries;
  const GitConfigEntry* hooks = Find(e, "core.hookspath");
  ASSERT_NE(hooks, nullptr);
  EXPECT_EQ(hooks->value, ".githooks");  // not Lazaret's own /dev/null override
  EXPECT_EQ(hooks->origin, absl::StrCat("file:", ws_, "/.git/config"));
  const GitConfigEntry* alias = Find(e, "alias.lint");
  ASSERT_NE(alias, nullptr);
  EXPECT_EQ(alias->value, "!./tools/lint.sh");
  EXPECT_EQ(alias->origin, absl::StrCat("file:", ws_, "/.git/../team.inc"));
  for (const GitConfigEntry& x : e) EXPECT_NE(x.origin.rfind("command line:", 0), 0u) << x.key;
  ASSERT_TRUE(config->top.ok()) << config->top.status();
  EXPECT_EQ(*config->top, ws_);
  absl::StatusOr<std::string> top = HostWorktreeTop(P("sub"));
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(*top, ws_);
}

TEST_F(WorkspaceScanTest, HostGitConfigOfAPlainFolderIsTheNonRepositoryConfig) {
  absl::StatusOr<HostGitConfig> config = ReadHostGitConfig(ws_);
  ASSERT_TRUE(config.ok()) << config.status();
  for (const GitConfigEntry& x : config->entries) {
    EXPECT_EQ(x.origin.find(ws_), std::string::npos) << x.key << " from " << x.origin;
    EXPECT_NE(x.origin.rfind("command line:", 0), 0u) << x.key;
  }
  ASSERT_TRUE(config->top.ok()) << config->top.status();
  EXPECT_EQ(*config->top, "");
}

TEST_F(WorkspaceScanTest, HostGitConfigWithABrokenConfigSaysHowToFixIt) {
  Repo("");
  Do(absl::StrCat("printf '[core\\n' >> ", Q(P(".git/config"))));
  absl::StatusOr<HostGitConfig> e = ReadHostGitConfig(ws_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("git config --list"), std::string::npos) << e.status();
}

}  // namespace
}  // namespace lazaret::cli::workspace
