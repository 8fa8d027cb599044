// Planted repositories (planted.h), through the end-of-session scan: every
// layout the agent can plant is neutralised, and nothing else is.
#include "services/sessiond/workspace/planted.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/workspace/scan.h"
#include "services/sessiond/workspace/snapshot.h"
#include "services/sessiond/workspace/test_fixture.h"

namespace lazaret::cli::workspace {
namespace {

TEST_F(WorkspaceScanTest, EveryPlantedLayoutIsNeutralisedAndRestorable) {
  Repo("pre/old");     // an untouched pre-existing clone
  Repo("pre/edited");  // a pre-existing clone the session arms
  GitDirSnapshot snap = Snapshot();

  // What the session plants.
  Repo("nested");
  Arm(P("nested/.git"));
  Arm(P("pre/edited/.git"));
  Do(absl::StrCat("git init -q --bare ", Q(P("store/bare.git"))));
  Arm(P("store/bare.git"));
  Do(absl::StrCat("mkdir -p ", Q(P("gf")), " && echo 'gitdir: ", P("store/bare.git"), "' > ",
                  Q(P("gf/.git"))));
  Do(absl::StrCat("git init -q --bare ", Q(P("wt/meta")), " && git --git-dir=", Q(P("wt/meta")),
                  " config core.worktree ..  && git --git-dir=", Q(P("wt/meta")),
                  " config core.bare false"));
  Arm(P("wt/meta"));
  std::string deep = "deep";
  for (int i = 0; i < 80; ++i) absl::StrAppend(&deep, "/d");
  Repo(deep);
  Arm(P(deep + "/.git"));
  // Armed, as the session leaves them (this is the attack).
  ASSERT_EQ(HostGitIn(P("nested")), P("nested/.git"));
  ASSERT_TRUE(Exists(marker_)) << "the test's arming does not work";
  unlink(marker_.c_str());

  ScanReport r = End(snap);
  const std::string lines = absl::StrJoin(ReportLines(r), "\n");

  // No host git command in or below any of them runs anything, and none
  // of them is a repository for git any more.
  for (const std::string& dir : {P("nested"), P("nested/sub-not-there"), P("pre/edited"), P("gf"),
                                 P("store/bare.git"), P("wt/meta"), P("wt"), P(deep)}) {
    Do(absl::StrCat("mkdir -p ", Q(dir)));
    const std::string found = HostGitIn(dir);
    EXPECT_TRUE(found.empty() || found == P("pre/old/.git")) << dir << " is still in " << found;
    EXPECT_FALSE(Exists(marker_)) << "host git in " << dir << " ran the agent's command\n" << lines;
    unlink(marker_.c_str());
  }
  // Inside the quarantined git directory itself neither.
  EXPECT_EQ(HostGitIn(P("nested/.git.lazaret-quarantine-s1")), "");
  EXPECT_FALSE(Exists(marker_));

  // The untouched clone is as it was.
  EXPECT_EQ(HostGitIn(P("pre/old")), P("pre/old/.git"));
  EXPECT_THAT(lines, ::testing::Not(::testing::HasSubstr("pre/old")));

  // The agent's files are all still there, and the report says how to
  // restore; its restore command brings the repository back.
  EXPECT_TRUE(Exists(P("nested/a")));
  EXPECT_TRUE(Exists(P("nested/.git.lazaret-quarantine-s1/config")));
  EXPECT_TRUE(Exists(P("nested/.git.lazaret-quarantine-s1/HEAD.lazaret-quarantine-s1")));
  EXPECT_TRUE(Exists(P("gf/.git.lazaret-quarantine-s1")));
  EXPECT_TRUE(Exists(P("store/bare.git/HEAD.lazaret-quarantine-s1")));
  EXPECT_TRUE(Exists(P("wt/meta/HEAD.lazaret-quarantine-s1")));
  ASSERT_EQ(r.repositories.size(), 6u) << lines;
  for (const auto& p : r.repositories) {
    EXPECT_TRUE(p.neutralised) << p.path << ": " << p.error;
    EXPECT_FALSE(p.restore.empty());
  }
  const PlantedRepository* nested = nullptr;
  for (const auto& p : r.repositories) {
    if (p.path == P("nested/.git")) nested = &p;
  }
  ASSERT_NE(nested, nullptr) << lines;
  Do(nested->restore);
  EXPECT_EQ(HostGitIn(P("nested")), P("nested/.git"));
  EXPECT_TRUE(Exists(marker_)) << "restored, it is the agent's repository again";
}

TEST_F(WorkspaceScanTest, OptOutReportsButLeavesRepositoriesAlone) {
  GitDirSnapshot snap = Snapshot(/*quarantine=*/false);
  Repo("dep");
  ScanReport r = End(snap);
  ASSERT_EQ(r.repositories.size(), 1u);
  EXPECT_FALSE(r.repositories[0].neutralised);
  EXPECT_TRUE(Exists(P("dep/.git/HEAD")));
  EXPECT_THAT(absl::StrJoin(ReportLines(r), "\n"),
              ::testing::HasSubstr("keep_planted_repositories"));
}

TEST_F(WorkspaceScanTest, ProtectedRootGitIsLeftToTheGitShadowButAnUnprotectedOneIsNot) {
  Repo(".");
  auto snap = TakeGitDirSnapshot("s1", {{ws_, true}}, true);
  ASSERT_TRUE(snap.ok());
  usleep(20 * 1000);
  Arm(ws_ + "/.git");  // (the Git Shadow keeps the agent from this; here: the developer)
  auto r = ScanAtSessionEnd(*snap);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->repositories.empty());
  EXPECT_TRUE(Exists(ws_ + "/.git/HEAD"));

  // A workspace without a repository: a .git the agent makes at its root
  // is planted like any other.
  Do("rm -rf " + Q(ws_ + "/.git"));
  auto snap2 = TakeGitDirSnapshot("s2", {{ws_, true}}, true);
  ASSERT_TRUE(snap2.ok());
  usleep(20 * 1000);
  Repo(".");
  auto r2 = ScanAtSessionEnd(*snap2);
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->repositories.size(), 1u);
  EXPECT_TRUE(Exists(ws_ + "/.git.lazaret-quarantine-s2"));
}

}  // namespace
}  // namespace lazaret::cli::workspace
