// The planted-code check against a real filesystem and real git: what the
// "session" creates or changes after its start is found, what existed
// before and is unchanged is not.
#include "services/brokerd/planted_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/brokerd/command/executor.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::brokerd {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class PlantedCheckTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    ScratchTest::SetUp();
    char resolved[PATH_MAX];
    ASSERT_NE(realpath(base_.c_str(), resolved), nullptr);
    base_ = resolved;
    ASSERT_EQ(mkdir(P("ws").c_str(), 0755), 0);
    scope_.host_workspace = P("ws");
    scope_.session_start_unix = 0;
  }

  // Runs a shell script in the workspace (the "developer" before the
  // session, or the "agent" during it).
  void Sh(const std::string& script) {
    const std::string cmd = absl::StrCat("cd '", P("ws"), "' && (", script, ") >/dev/null 2>&1");
    ASSERT_EQ(system(cmd.c_str()), 0) << script;
  }
  // Everything so far existed before the session: it starts at the next
  // second, and what is written from here on has a ctime at or after it.
  void StartSession() {
    const time_t now = time(nullptr);
    while (time(nullptr) == now) usleep(10000);
    scope_.session_start_unix = time(nullptr);
  }
  PlantedReport Check(const std::string& cwd_rel, std::vector<std::string> argv,
                      bool is_git = true) {
    const std::string cwd = cwd_rel.empty() ? P("ws") : P("ws/" + cwd_rel);
    return CheckPlantedArgv(scope_, cwd, argv, is_git);
  }
  static std::string All(const PlantedReport& r) { return absl::StrJoin(r.findings, "\n"); }

  PlantedScope scope_;
};

TEST_F(PlantedCheckTest, RepositoryPlantedInADirectoryNamedSpaceIsFoundAndShownEscaped) {
  Sh("git init -q -b main . && mkdir ' '");
  StartSession();
  Sh("git init -q ' ' && git -C ' ' config core.fsmonitor 'touch /tmp/never'");
  const PlantedReport r = Check(" ", {"git", "status"});
  ASSERT_EQ(r.findings.size(), 1u) << All(r);
  EXPECT_THAT(r.findings[0], HasSubstr("a git repository created in this session at "
                                       "'/workspace/\\x20/.git'"));
  EXPECT_THAT(r.findings[0], HasSubstr("can make git run any program"));
  EXPECT_THAT(r.git_pin_env, IsEmpty());
}

TEST_F(PlantedCheckTest, RepositoryPlantedAboveTheWorkingDirectoryIsFound) {
  StartSession();
  Sh("mkdir -p a/b/c && git init -q a");
  EXPECT_THAT(All(Check("a/b/c", {"ls"}, false)),
              HasSubstr("a git repository created in this session at '/workspace/a/.git'"));
}

TEST_F(PlantedCheckTest, PreExistingUnchangedRepositoryIsNotAFindingButItsChangedConfigIs) {
  Sh("git init -q -b main vendor && git -C vendor commit -q --allow-empty -m x");
  StartSession();
  Sh("touch vendor/file && git -C vendor status --short");
  EXPECT_THAT(Check("vendor", {"git", "status"}).findings, IsEmpty());
  Sh("git -C vendor config core.pager 'sh -c id'");
  EXPECT_THAT(All(Check("vendor", {"git", "log"})),
              HasSubstr("a git repository at '/workspace/vendor/.git' whose config changed"));
}

TEST_F(PlantedCheckTest, HookAddedToAPreExistingRepositoryIsFound) {
  Sh("git init -q vendor && rm -rf vendor/.git/hooks && mkdir vendor/.git/hooks");
  StartSession();
  Sh("printf '#!/bin/sh\\nid\\n' > vendor/.git/hooks/post-checkout");
  EXPECT_THAT(All(Check("vendor", {"git", "checkout", "x"})),
              HasSubstr("hooks/post-checkout changed in this session"));
}

TEST_F(PlantedCheckTest, GitfileCreatedInTheSessionIsFound) {
  Sh("mkdir -p sub elsewhere && git init -q --bare elsewhere/r.git");
  StartSession();
  Sh("echo 'gitdir: ../elsewhere/r.git' > sub/.git");
  EXPECT_THAT(All(Check("sub", {"git", "status"})),
              HasSubstr("a .git file (gitfile) created or changed in this session at "
                        "'/workspace/sub/.git'"));
}

TEST_F(PlantedCheckTest, OldGitfileIsFollowedToTheRepositoryItNames) {
  Sh("mkdir -p sub && git init -q --bare store.git && echo 'gitdir: ../store.git' > sub/.git");
  StartSession();
  EXPECT_THAT(Check("sub", {"git", "status"}).findings, IsEmpty());
  Sh("git --git-dir=store.git config core.fsmonitor 'touch /tmp/never'");
  EXPECT_THAT(All(Check("sub", {"git", "status"})),
              HasSubstr("the git directory '/workspace/sub/.git' points to at "
                        "'/workspace/store.git' whose config changed"));
}

TEST_F(PlantedCheckTest, BareLayoutAsTheWorkingDirectoryIsFound) {
  StartSession();
  Sh("git init -q --bare plain");
  EXPECT_THAT(All(Check("plain", {"git", "log"})),
              HasSubstr("a git directory (bare repository layout) created in this session at "
                        "'/workspace/plain'"));
}

TEST_F(PlantedCheckTest, DirectoriesArgumentsNameAreCheckedInEveryForm) {
  Sh("git init -q -b main . && mkdir -p sub/deep && touch sub/deep/file.txt");
  StartSession();
  Sh("git init -q sub/deep");
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{"git", "-C", "sub/deep", "status"},
                                             {"git", "--git-dir=sub/deep/.git", "status"},
                                             {"git", "--work-tree=/workspace/sub/deep", "status"},
                                             {"make", "-Csub/deep"},
                                             {"npm", "--prefix", "sub/deep", "test"},
                                             {"cat", "sub/deep/file.txt"},
                                             {"git", "-C", P("ws/sub/deep"), "status"},
                                             {"git", "-C", "sub/../sub/deep", "status"}}) {
    EXPECT_THAT(All(Check("", argv)), HasSubstr("'/workspace/sub/deep/.git'"))
        << absl::StrJoin(argv, " ");
  }
  // The same command at a clean directory: nothing, and git is pinned to
  // the workspace's own repository.
  const PlantedReport clean = Check("", {"git", "-C", "sub", "status"});
  EXPECT_THAT(clean.findings, IsEmpty()) << All(clean);
  EXPECT_THAT(clean.git_pin_env,
              ::testing::ElementsAre("GIT_DIR=" + P("ws/.git"), "GIT_WORK_TREE=" + P("ws")));
}

TEST_F(PlantedCheckTest, SymlinksAreFollowedInsideTheWorkspaceOnly) {
  Sh("mkdir -p in");
  StartSession();
  // Outside the workspace: a repository the check must not walk into.
  Sh(absl::StrCat("git init -q '", P("outside"), "' && ln -s '", P("outside"),
                  "' out && ln -s in/r inlink && git init -q in/r"));
  const PlantedReport out = Check("", {"ls", "out"}, false);
  EXPECT_THAT(All(out), ::testing::Not(HasSubstr("outside"))) << All(out);
  EXPECT_THAT(All(Check("", {"git", "-C", "inlink", "status"})),
              HasSubstr("'/workspace/in/r/.git'"));
  // A working directory can never be a symlink (CheckedCommand refuses
  // it); an argument that climbs out with ".." is not followed either.
  EXPECT_THAT(All(Check("in", {"ls", "../../outside"}, false)),
              ::testing::Not(HasSubstr("outside")));
}

TEST_F(PlantedCheckTest, NamesWithNewlinesAndUnicodeAreEscaped) {
  StartSession();
  Sh("mkdir \"$(printf 'a\\nb')\" 'ü x' && git init -q \"$(printf 'a\\nb')\" && "
     "git init -q 'ü x'");
  EXPECT_THAT(All(Check("a\nb", {"git", "status"})), HasSubstr("'/workspace/a\\nb/.git'"));
  EXPECT_THAT(All(Check("ü x", {"git", "status"})), HasSubstr("'/workspace/ü\\x20x/.git'"));
}

TEST_F(PlantedCheckTest, HostToolFilesTheSessionWroteAreFoundOldOnesAreNot) {
  Sh("mkdir -p .vscode sub && echo '{}' > .vscode/settings.json && touch .editorconfig");
  StartSession();
  EXPECT_THAT(Check("sub", {"ls"}, false).findings, IsEmpty());
  Sh("echo 'export X=1' > sub/.envrc && echo '{\"x\":1}' > .vscode/settings.json");
  const std::string all = All(Check("sub", {"ls"}, false));
  EXPECT_THAT(all, HasSubstr("'/workspace/sub/.envrc', a file that editors, shells or git act on"));
  EXPECT_THAT(all, HasSubstr("'/workspace/.vscode', a directory"));
  EXPECT_THAT(all, ::testing::Not(HasSubstr(".editorconfig")));
}

TEST_F(PlantedCheckTest, GitIsNotPinnedWhenANestedRepositoryOrAnotherCommandIsInvolved) {
  Sh("git init -q -b main . && git init -q nested && mkdir plain");
  StartSession();
  EXPECT_THAT(Check("plain", {"git", "status"}).git_pin_env, ::testing::SizeIs(2));
  EXPECT_THAT(Check("plain", {"ls"}, false).git_pin_env, IsEmpty());
  EXPECT_THAT(Check("nested", {"git", "status"}).git_pin_env, IsEmpty());
  EXPECT_THAT(Check("plain", {"git", "init", "x"}).git_pin_env, IsEmpty());
  EXPECT_THAT(Check("plain", {"git", "--git-dir=nested/.git", "log"}).git_pin_env, IsEmpty());
}

TEST_F(PlantedCheckTest, NewFindingsAreThoseNotSeenBefore) {
  EXPECT_THAT(NewFindings({"a", "b"}, {"b", "c"}), ::testing::ElementsAre("c"));
  EXPECT_THAT(NewFindings({"a"}, {"a"}), IsEmpty());
}

TEST_F(PlantedCheckTest, GitBinaryIsRecognisedByItsFileName) {
  auto is_git = [](const char* path) {
    command::ResolvedBinary b;
    b.path = path;
    return IsGitBinary(b);
  };
  EXPECT_TRUE(is_git("/usr/bin/git"));
  EXPECT_TRUE(is_git("/usr/bin/git-upload-pack"));
  EXPECT_FALSE(is_git("/usr/bin/gitk2"));
  EXPECT_FALSE(is_git("/usr/bin/make"));
  command::ResolvedBinary env;
  env.path = "/usr/bin/env";
  EXPECT_TRUE(IsGitCommand(env, {"env", "A=1", "git", "status"}));
  EXPECT_TRUE(IsGitCommand(env, {"env", "/usr/bin/git", "status"}));
  EXPECT_FALSE(IsGitCommand(env, {"env", "A=1", "id"}));
}

// Defence in depth, with real git: even run against a planted repository
// (which the broker refuses), the protective environment keeps its
// fsmonitor, hooks and pager from running.
TEST_F(PlantedCheckTest, ProtectionEnvironmentKeepsPlantedFsmonitorHooksAndPagerFromRunning) {
  const std::string marker = P("marker");
  Sh(absl::StrCat("git init -q -b main . && git commit -q --allow-empty -m x && ",
                  "touch f && git add f && ", "git config core.fsmonitor 'touch ", marker,
                  ".fsmonitor; false' && ", "git config core.pager 'touch ", marker,
                  ".pager; cat' && ", "printf '#!/bin/sh\\ntouch ", marker,
                  ".hook\\n' > .git/hooks/post-commit && ", "chmod +x .git/hooks/post-commit"));
  command::ExecLimits limits;
  limits.timeout = absl::Seconds(20);
  for (std::vector<std::string> argv :
       {std::vector<std::string>{"git", "status"},
        {"git", "-p", "log"},
        {"git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "y"}}) {
    absl::StatusOr<command::CheckedCommand> checked =
        command::CheckedCommand::Check(argv, P("ws"), "");
    ASSERT_TRUE(checked.ok()) << checked.status();
    absl::StatusOr<std::unique_ptr<command::RunningCommand>> running =
        command::RunningCommand::Start(*checked, limits, GitProtectionEnvironment());
    ASSERT_TRUE(running.ok()) << running.status();
    const command::ExecResult result = (*running)->Wait();
    EXPECT_EQ(result.exit_code, 0) << absl::StrJoin(argv, " ") << ": " << result.err;
  }
  for (const char* suffix : {".fsmonitor", ".pager", ".hook"}) {
    EXPECT_FALSE(Exists(absl::StrCat("marker", suffix))) << suffix;
  }
}

}  // namespace
}  // namespace lazaret::brokerd
