#include "services/common/profile_paths/host_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "services/configd/test_util.h"

namespace lazaret::config {
namespace {

using ::testing::HasSubstr;
using testing::Scratch;

constexpr unsigned kAll =
    kTokenProfileName | kTokenProfileDir | kTokenWorkspaceDir | kTokenRuntimeDir;

ExpansionValues Values() {
  ExpansionValues v;
  v.home = "/home/u";
  v.profile_name = "claude-code";
  v.profile_dir = "/data/claude-code";
  v.workspace_dir = "/src/proj";
  v.runtime_dir = "/run/user/1000/lazaret";
  return v;
}

struct Expansion {
  const char* tmpl;
  const char* result;
};

TEST(HostPathsTest, ExpandsTildeOnlyFirstAndTheWhitelistedTokens) {
  const Expansion cases[] = {
      {"~", "/home/u"},
      {"~/", "/home/u"},
      {"~/.cache/x", "/home/u/.cache/x"},
      {"/a/~", "/a/~"},
      {"/a/~/b", "/a/~/b"},
      {"{profile_dir}/cache", "/data/claude-code/cache"},
      {"{workspace_dir}/data", "/src/proj/data"},
      {"/srv/{profile_name}", "/srv/claude-code"},
      {"{runtime_dir}/escalation", "/run/user/1000/lazaret/escalation"},
      {"/a//b/./c/", "/a/b/c"},
      {"/", "/"},
  };
  for (const Expansion& c : cases) {
    absl::StatusOr<std::string> r = ExpandHostPath(c.tmpl, kAll, Values());
    ASSERT_TRUE(r.ok()) << c.tmpl << ": " << r.status();
    EXPECT_EQ(*r, c.result) << c.tmpl;
  }
}

struct Refusal {
  const char* tmpl;
  unsigned allowed;
  const char* error;
};

TEST(HostPathsTest, RefusesUnknownTokensTildeUserTraversalAndRelativePaths) {
  const Refusal cases[] = {
      {"{home}/x", kAll, "unknown token {home}"},
      {"{PROFILE_DIR}", kAll, "unknown token {PROFILE_DIR}"},
      {"{profile_dir", kAll, "without a closing '}'"},
      {"/a}b", kAll, "'}' without a matching '{'"},
      {"{}", kAll, "unknown token {}"},
      {"~root/.ssh", kAll, "'~user' is not supported"},
      {"~user", kAll, "'~user' is not supported"},
      {"{workspace_dir}", kTokenRuntimeDir, "cannot be used in this key"},
      {"/a/../b", kAll, "'..' segment"},
      {"..", kAll, "'..' segment"},
      {"{workspace_dir}/..", kAll, "'..' segment"},
      {"~/../other", kAll, "'..' segment"},
      {"relative/path", kAll, "not absolute"},
      {"~user/x", kAll, "'~user'"},
      {"", kAll, "not absolute"},
  };
  for (const Refusal& c : cases) {
    absl::StatusOr<std::string> r = ExpandHostPath(c.tmpl, c.allowed, Values());
    ASSERT_FALSE(r.ok()) << c.tmpl << " -> " << *r;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.error)) << c.tmpl;
  }
}

TEST(HostPathsTest, DotDotInATokenValueIsRefusedAfterExpansion) {
  ExpansionValues v = Values();
  v.home = "/home/../root";
  absl::StatusOr<std::string> r = ExpandHostPath("~/x", kAll, v);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("'..' segment"));
  v = Values();
  v.workspace_dir = "";
  EXPECT_FALSE(ExpandHostPath("{workspace_dir}/x", kAll, v).ok());
}

TEST(HostPathsTest, CheckPathTemplateIsSyntaxOnly) {
  EXPECT_TRUE(CheckPathTemplate("{workspace_dir}/x", kTokenWorkspaceDir).ok());
  EXPECT_TRUE(CheckPathTemplate("relative", 0).ok());
  EXPECT_FALSE(CheckPathTemplate("{profile_dir}", 0).ok());
  EXPECT_FALSE(CheckPathTemplate("~x", 0).ok());
}

TEST(HostPathsTest, CanonicalizeResolvesSymlinksAndKeepsMissingTails) {
  Scratch s;
  s.Dir("real/sub");
  s.Symlink(s.Path("real"), "link");
  s.Symlink("real/sub", "rel-link");
  EXPECT_EQ(*CanonicalizeHostPath(s.Path("link/sub")), s.Path("real/sub"));
  EXPECT_EQ(*CanonicalizeHostPath(s.Path("rel-link")), s.Path("real/sub"));
  EXPECT_EQ(*CanonicalizeHostPath(s.Path("link/missing/deeper")), s.Path("real/missing/deeper"));
  EXPECT_EQ(*CanonicalizeHostPath("/"), "/");
}

TEST(HostPathsTest, CanonicalizeRefusesDanglingSymlinks) {
  Scratch s;
  s.Symlink(s.Path("nowhere"), "dangling");
  absl::StatusOr<std::string> r = CanonicalizeHostPath(s.Path("dangling/x"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("symlink whose target does not exist"));
  s.Symlink(s.Path("loop"), "loop");
  EXPECT_FALSE(CanonicalizeHostPath(s.Path("loop")).ok());
}

TEST(HostPathsTest, SensitivePathsAreRefusedInsideAndAsAncestors) {
  Scratch s;
  HostContext h = s.Host();
  s.Dir("home/.gnupg");
  // ~/.aws is itself a symlink elsewhere: its target is sensitive too.
  s.Dir("elsewhere/aws-creds");
  s.Symlink(s.Path("elsewhere/aws-creds"), "home/.aws");
  s.Dir("ws/.git/hooks");
  const std::vector<SensitivePath> sens = SensitivePaths(h, s.workspace());
  struct Case {
    std::string path;
    bool ancestors;
    const char* error;  // nullptr: allowed
  };
  const Case cases[] = {
      {s.Path("home/.ssh"), true, "~/.ssh (ssh keys)"},
      {s.Path("home/.ssh/keys"), true, "inside ~/.ssh"},
      {s.Path("home/.gnupg"), true, "GnuPG"},
      {s.Path("elsewhere/aws-creds"), true, "AWS credentials"},
      {s.Path("home"), true, "contains ~/.ssh"},
      {"/", true, "contains"},
      {s.Path("home/.config/lazaret"), true, "configuration directory"},
      {s.Path("home/.local/state/lazaret/x"), true, "state directory"},
      {s.Path("run"), true, "runtime directory"},
      {s.Path("ws/.git"), true, "Git Shadow"},
      {s.Path("ws/.git/hooks"), true, "Git Shadow"},
      {s.Path("ws"), true, "contains the workspace's .git"},
      {"/proc/self", true, "/proc"},
      {"/dev", true, "/dev"},
      {s.Path("home"), false, nullptr},
      {s.Path("home/src"), true, nullptr},
      {s.Path("ws/data"), true, nullptr},
  };
  for (const Case& c : cases) {
    absl::Status st = CheckNotSensitive(c.path, sens, c.ancestors);
    if (c.error == nullptr) {
      EXPECT_TRUE(st.ok()) << c.path << ": " << st;
    } else {
      ASSERT_FALSE(st.ok()) << c.path;
      EXPECT_THAT(std::string(st.message()), HasSubstr(c.error)) << c.path;
    }
  }
}

TEST(HostPathsTest, LinkedWorktreeGitDirIsSensitive) {
  Scratch s;
  HostContext h = s.Host();
  s.Dir("main/.git/worktrees/ws");
  s.File("ws/.git", "gitdir: " + s.Path("main/.git/worktrees/ws") + "\n");
  const std::vector<SensitivePath> sens = SensitivePaths(h, s.workspace());
  EXPECT_FALSE(CheckNotSensitive(s.Path("main/.git/worktrees/ws"), sens, true).ok());
  EXPECT_FALSE(CheckNotSensitive(s.Path("main/.git/hooks"), sens, true).ok());
  EXPECT_TRUE(CheckNotSensitive(s.Path("main/src"), sens, true).ok());
}

struct ContainerCase {
  const char* path;
  const char* result_or_error;
  bool ok;
};

TEST(HostPathsTest, ContainerPathsAreCleanAbsoluteAndOutsideReservedTrees) {
  const ContainerCase cases[] = {
      {"/usr", "/usr", true},
      {"/root/.cache/", "/root/.cache", true},
      {"/home/agent", "/home/agent", true},
      {"/workspacefoo", "/workspacefoo", true},
      {"usr", "absolute", false},
      {"/", "root directory", false},
      {"/a/../b", "clean path", false},
      {"/a/./b", "clean path", false},
      {"/a//b", "clean path", false},
      {"/workspace", "/workspace", false},
      {"/workspace/.git", "/workspace", false},
      {"/run/lazaret/escalate.sock", "/run/lazaret", false},
      {"/proc/1", "/proc", false},
      {"/data:rw", "':'", false},
      {"/a,b", "':'", false},
      {"/a\nb", "control character", false},
  };
  for (const ContainerCase& c : cases) {
    absl::StatusOr<std::string> r = CheckContainerPath(c.path);
    if (c.ok) {
      ASSERT_TRUE(r.ok()) << c.path << ": " << r.status();
      EXPECT_EQ(*r, c.result_or_error);
    } else {
      ASSERT_FALSE(r.ok()) << c.path;
      EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.result_or_error)) << c.path;
    }
  }
}

TEST(HostPathsTest, HostContextFallsBackToPasswdAndIgnoresRelativeXdg) {
  const char* old_home = std::getenv("HOME");
  const std::string saved = old_home != nullptr ? old_home : "";
  setenv("HOME", "relative/home", 1);
  setenv("XDG_CONFIG_HOME", "relative", 1);
  setenv("XDG_STATE_HOME", "/abs/state/", 1);
  absl::StatusOr<HostContext> h = HostContextFromEnvironment("/run/x");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->home[0], '/');
  EXPECT_NE(h->home, "relative/home");
  EXPECT_EQ(h->config_home, h->home + "/.config");
  EXPECT_EQ(h->state_home, "/abs/state");
  EXPECT_EQ(h->TrustStoreFile(), "/abs/state/lazaret/trusted-workspace-files");
  EXPECT_FALSE(HostContextFromEnvironment("relative").ok());
  if (old_home != nullptr) setenv("HOME", saved.c_str(), 1);
  unsetenv("XDG_CONFIG_HOME");
  unsetenv("XDG_STATE_HOME");
}

}  // namespace
}  // namespace lazaret::config
