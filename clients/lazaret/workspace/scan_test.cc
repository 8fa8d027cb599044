#include "clients/lazaret/workspace/scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <ostream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/workspace/privileges.h"
#include "clients/lazaret/workspace/snapshot.h"

namespace lazaret::cli::workspace {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

struct Sh {
  int code;
  std::string out;
};

Sh RunSh(const std::string& cmd) {
  Sh r{-1, ""};
  FILE* p = popen(absl::StrCat("(", cmd, ") 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Q(const std::string& s) { return absl::StrCat("'", s, "'"); }

class WorkspaceScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-wsscan-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    ws_ = base_ + "/ws";
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    marker_ = base_ + "/MARKER";
  }
  void TearDown() override {
    (void)!system(("chmod -R u+rwx " + base_ + "; rm -rf " + base_).c_str());
  }

  void Do(const std::string& cmd) {
    Sh r = RunSh(cmd);
    ASSERT_EQ(r.code, 0) << cmd << "\n" << r.out;
  }
  // A repository at `rel` (created with one commit).
  void Repo(const std::string& rel) {
    Do(absl::StrCat("mkdir -p ", Q(P(rel)), " && cd ", Q(P(rel)),
                    " && git init -q && echo a > a && git add a && "
                    "git -c user.name=t -c user.email=t@x commit -qm one"));
  }
  // Makes host git in the repository whose git dir is `gitdir` run the
  // marker command from everything it can be told to run.
  void Arm(const std::string& gitdir) {
    const std::string touch = absl::StrCat("touch ", marker_);
    for (const char* key : {"core.fsmonitor", "core.pager", "diff.external", "core.sshCommand"}) {
      Do(absl::StrCat("git config --file ", Q(gitdir + "/config"), " ", key, " ", Q(touch)));
    }
    Do(absl::StrCat("mkdir -p ", Q(gitdir + "/hooks"), " && printf '#!/bin/sh\\n", touch, "\\n' > ",
                    Q(gitdir + "/hooks/post-checkout"), " && chmod +x ",
                    Q(gitdir + "/hooks/post-checkout")));
  }
  // Host git status/log/diff in `dir`; returns the git dir git found ("" if
  // none). The marker must not appear.
  std::string HostGitIn(const std::string& dir) {
    RunSh(absl::StrCat("cd ", Q(dir), " && git status; git log -1; git diff; git diff HEAD"));
    Sh r = RunSh(absl::StrCat("cd ", Q(dir), " && git rev-parse --absolute-git-dir"));
    return r.code == 0 ? std::string(absl::StripTrailingAsciiWhitespace(r.out)) : "";
  }
  std::string P(const std::string& rel) const { return ws_ + "/" + rel; }

  GitDirSnapshot Snapshot(bool quarantine = true) {
    auto s = TakeGitDirSnapshot("s1", {{ws_, false}}, quarantine);
    EXPECT_TRUE(s.ok()) << s.status();
    usleep(20 * 1000);  // the session's writes get a later ctime
    return s.ok() ? *s : GitDirSnapshot{};
  }
  ScanReport End(const GitDirSnapshot& s, const ScanLimits& limits = {}) {
    // The snapshot goes through its file form, as for `lazaret clean`.
    auto parsed = ParseSnapshot(SerializeSnapshot(s));
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    auto r = ScanAtSessionEnd(*parsed, limits);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : ScanReport{};
  }

  std::string base_, ws_, marker_;
};

TEST_F(WorkspaceScanTest, SnapshotSurvivesItsFileForm) {
  Repo("a b/c\nd");
  auto s = TakeGitDirSnapshot("abc123", {{ws_, true}}, false);
  ASSERT_TRUE(s.ok()) << s.status();
  auto back = ParseSnapshot(SerializeSnapshot(*s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->session_id, "abc123");
  EXPECT_FALSE(back->quarantine);
  EXPECT_EQ(back->prints, s->prints);
  EXPECT_EQ(back->prints.count({0, "a b/c\nd/.git"}), 1u);
  EXPECT_EQ(back->since.tv_nsec, s->since.tv_nsec);
  EXPECT_FALSE(ParseSnapshot("garbage\n").ok());
}

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

TEST_F(WorkspaceScanTest, TooDeepIsReportedLoudlyAndMovedAside) {
  GitDirSnapshot snap = Snapshot();
  std::string deep = "x";
  for (int i = 0; i < 12; ++i) absl::StrAppend(&deep, "/d");
  Repo(deep);
  ScanLimits limits;
  limits.max_depth = 8;
  ScanReport r = End(snap, limits);
  const std::string lines = absl::StrJoin(ReportLines(r), "\n");
  EXPECT_THAT(lines, ::testing::HasSubstr("deeper than 8 levels"));
  EXPECT_THAT(lines, ::testing::HasSubstr("moved aside"));
  EXPECT_TRUE(Exists(P("x/d/d/d/d/d/d/d.lazaret-quarantine-s1"))) << lines;
  EXPECT_FALSE(Exists(P("x/d/d/d/d/d/d/d")));
}

TEST_F(WorkspaceScanTest, StripsSetuidSetgidAndCapabilitiesOfWhatTheSessionWroteOnly) {
  Do(absl::StrCat("cp /bin/true ", Q(P("old-suid")), " && chmod 4755 ", Q(P("old-suid"))));
  GitDirSnapshot snap = Snapshot();
  Do(absl::StrCat("cp /bin/true ", Q(P("suid")), " && chmod 4755 ", Q(P("suid"))));
  Do(absl::StrCat("cp /bin/true ", Q(P("sgid")), " && chmod 2711 ", Q(P("sgid"))));
  Do(absl::StrCat("mkdir -p ", Q(P("sub/gdir")), " && chmod 2775 ", Q(P("sub/gdir"))));
  Do(absl::StrCat("cp /bin/true ", Q(P("sub/capped")), " && setcap cap_net_raw+ep ",
                  Q(P("sub/capped"))));
  // Not followed: a symlink to a setuid file outside.
  Do(absl::StrCat("cp /bin/true ", Q(base_ + "/outside-suid"), " && chmod 4755 ",
                  Q(base_ + "/outside-suid"), " && ln -s ", Q(base_ + "/outside-suid"), " ",
                  Q(P("link"))));
  ASSERT_GE(getxattr(P("sub/capped").c_str(), "security.capability", nullptr, 0), 0);

  // The periodic sweep strips; the end scan then has nothing left to strip.
  std::vector<std::string> stripped;
  ASSERT_TRUE(StripPrivilegeBits(snap.roots, snap.since, {}, &stripped).ok());
  auto mode = [](const std::string& p) {
    struct stat st {};
    lstat(p.c_str(), &st);
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode(P("suid")), 0755u);
  EXPECT_EQ(mode(P("sgid")), 0711u);
  EXPECT_EQ(mode(P("sub/gdir")), 0775u);
  EXPECT_LT(getxattr(P("sub/capped").c_str(), "security.capability", nullptr, 0), 0);
  EXPECT_EQ(mode(P("old-suid")), 04755u) << "not written by the session: left alone";
  EXPECT_EQ(mode(base_ + "/outside-suid"), 04755u) << "a symlink was followed";
  const std::string all = absl::StrJoin(stripped, "\n");
  for (const char* name : {"/suid: removed setuid", "/sgid: removed setgid",
                           "sub/gdir: removed setgid", "sub/capped: removed file capabilities"}) {
    EXPECT_THAT(all, ::testing::HasSubstr(name)) << all;
  }
  EXPECT_EQ(stripped.size(), 4u) << all;

  Do(absl::StrCat("chmod 6755 ", Q(P("suid"))));
  ScanReport r = End(snap);
  EXPECT_EQ(mode(P("suid")), 0755u);
  EXPECT_THAT(absl::StrJoin(ReportLines(r), "\n"), ::testing::HasSubstr("setuid+setgid bits"));
}

TEST_F(WorkspaceScanTest, ScanChangesNothingItFindsUnchanged) {
  Repo("pre");
  Do(absl::StrCat("mkdir -p ", Q(P("ro/inner")), " && echo x > ", Q(P("ro/inner/f")),
                  " && chmod 0555 ", Q(P("ro/inner")), " ", Q(P("ro")), " && echo y > ",
                  Q(P("odd")), " && chmod 0604 ", Q(P("odd")), " && touch -d 2001-02-03 ",
                  Q(P("odd")), " ", Q(P("ro/inner/f"))));
  const std::string before =
      RunSh(absl::StrCat("cd ", Q(ws_), " && find . -exec stat -c '%n %a %u %g %X %Y %Z' {} +"))
          .out;
  GitDirSnapshot snap = Snapshot();
  ScanReport r = End(snap);
  std::vector<std::string> stripped;
  ASSERT_TRUE(StripPrivilegeBits(snap.roots, snap.since, {}, &stripped).ok());
  const std::string after =
      RunSh(absl::StrCat("cd ", Q(ws_), " && find . -exec stat -c '%n %a %u %g %X %Y %Z' {} +"))
          .out;
  EXPECT_EQ(before, after);
  EXPECT_TRUE(ReportLines(r).empty()) << absl::StrJoin(ReportLines(r), "\n");
}

TEST_F(WorkspaceScanTest, EditorFilesTheSessionWroteAreListed) {
  Do(absl::StrCat("mkdir -p ", Q(P(".idea")), " && touch ", Q(P(".editorconfig"))));
  GitDirSnapshot snap = Snapshot();
  Do(absl::StrCat("mkdir -p ", Q(P(".vscode")), " ", Q(P("sub/.devcontainer")), " && echo '{}' > ",
                  Q(P(".vscode/tasks.json")), " && echo 'export X=1' > ", Q(P(".envrc")),
                  " && touch ", Q(P(".env.local")), " ",
                  Q(P("sub/.devcontainer/devcontainer.json")), " ", Q(P("plain.txt"))));
  ScanReport r = End(snap);
  std::vector<std::string> want = {P(".vscode/"), P(".envrc"), P(".env.local"),
                                   P("sub/.devcontainer/")};
  for (const auto& w : want) {
    EXPECT_NE(std::find(r.editor_files.begin(), r.editor_files.end(), w), r.editor_files.end())
        << w << " missing from:\n"
        << absl::StrJoin(r.editor_files, "\n");
  }
  EXPECT_EQ(r.editor_files.size(), want.size()) << absl::StrJoin(r.editor_files, "\n");
}

struct Owner {
  uid_t uid;
  gid_t gid;
  bool operator==(const Owner& o) const { return uid == o.uid && gid == o.gid; }
};
std::ostream& operator<<(std::ostream& os, const Owner& o) { return os << o.uid << ":" << o.gid; }
Owner OwnerOf(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return {static_cast<uid_t>(-1), static_cast<gid_t>(-1)};
  return {st.st_uid, st.st_gid};
}

// Rootful: what the session wrote belongs to host root (or to a uid the
// agent chose); the sweep and the end scan give it to the workspace's owner
// as recorded before the sandbox started, through the entry itself (a
// symlink, not its target), and nothing older than the session.
TEST_F(WorkspaceScanTest, RootfulHandsWhatTheSessionWroteBackToTheWorkspaceOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (chown to another uid), as rootful Lazaret is";
  const Owner dev{4242, 4343};
  Do(absl::StrCat("touch ", Q(P("old-root")), " && install -d -o 777 -g 777 ", Q(P("old-dir")),
                  " && touch ", Q(P("old-dir/kept")), " && chown 777:777 ", Q(P("old-dir/kept")),
                  " && chown 4242:4343 ", Q(ws_), " && touch ", Q(base_ + "/outside")));
  // A tree that is not handed back (rootless, or a profile volume outside
  // the rule): same owner, same writes.
  const std::string other = base_ + "/other";
  Do(absl::StrCat("install -d -o 4242 -g 4343 ", Q(other)));
  ScanRoot ws{ws_, false, true};
  ScanRoot plain{other, false, false};
  auto snap = TakeGitDirSnapshot("s1", {ws, plain}, true);
  ASSERT_TRUE(snap.ok()) << snap.status();
  ASSERT_EQ(snap->roots[0].owner_uid, std::optional<uid_t>(4242));
  ASSERT_EQ(snap->roots[0].owner_gid, std::optional<gid_t>(4343));
  usleep(20 * 1000);

  // The agent (host root): a file, a directory with a file, a symlink to a
  // root-owned file outside, a file given to a uid of its choosing, a
  // setuid-root copy, and the workspace directory itself taken over.
  Do(absl::StrCat("cd ", Q(ws_), " && touch new && mkdir -p d/e && touch d/e/f && ln -s ",
                  Q(base_ + "/outside"), " link && touch chosen && chown 1234:1234 chosen && ",
                  "cp /bin/true suid && chmod 4755 suid && chown 0:0 ", Q(ws_), " && touch ",
                  Q(other + "/root-file")));
  ASSERT_EQ(OwnerOf(P("link")), (Owner{0, 0}));

  std::vector<std::string> stripped;
  std::map<std::string, uint64_t> handed;
  ASSERT_TRUE(StripPrivilegeBits(snap->roots, snap->since, {}, &stripped, &handed).ok());
  for (const char* rel : {"new", "d", "d/e", "d/e/f", "link", "chosen", "suid"}) {
    EXPECT_EQ(OwnerOf(P(rel)), dev) << rel;
  }
  EXPECT_EQ(OwnerOf(ws_), dev) << "the workspace directory itself";
  EXPECT_EQ(OwnerOf(base_ + "/outside"), (Owner{0, 0})) << "a symlink was followed";
  EXPECT_EQ(OwnerOf(P("old-root")), (Owner{0, 0})) << "older than the session: left alone";
  EXPECT_EQ(OwnerOf(P("old-dir/kept")), (Owner{777, 777})) << "older than the session";
  EXPECT_EQ(OwnerOf(other + "/root-file"), (Owner{0, 0})) << "hand-back not asked for";
  struct stat st {};
  ASSERT_EQ(lstat(P("suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(handed.begin()->second, 8u) << "7 entries and the workspace directory";
  EXPECT_THAT(handed.begin()->first, ::testing::HasSubstr("uid 4242, gid 4343"));
  EXPECT_THAT(absl::StrJoin(stripped, "\n"), ::testing::HasSubstr("/suid: removed setuid bit"));

  // The end scan (through the snapshot's file form, as `lazaret clean`
  // reads it) gives back what came after the sweep, and says so once.
  Do(absl::StrCat("touch ", Q(P("d/late")), " ", Q(P("late"))));
  ScanReport r = End(*snap);
  EXPECT_EQ(OwnerOf(P("d/late")), dev);
  EXPECT_EQ(OwnerOf(P("late")), dev);
  ASSERT_EQ(r.handed_back.size(), 1u);
  EXPECT_EQ(r.handed_back.begin()->second, 2u);
  const std::string lines = absl::StrJoin(ReportLines(r), "\n");
  EXPECT_THAT(lines, ::testing::HasSubstr("gave 2 files the session created or changed"));
  EXPECT_THAT(lines, ::testing::HasSubstr("back to uid 4242, gid 4343"));
  EXPECT_EQ(OwnerOf(other + "/root-file"), (Owner{0, 0}));
}

// A root owned by host root records no owner: nothing is handed to root,
// and ownership there stays as the session left it.
TEST_F(WorkspaceScanTest, RootOwnedWorkspaceRecordsNoOwnerAndChangesNoOwnership) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (chown to another uid), as rootful Lazaret is";
  Do(absl::StrCat("chown 0:0 ", Q(ws_)));
  auto snap = TakeGitDirSnapshot("s1", {{ws_, false, true}}, true);
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_FALSE(snap->roots[0].owner_uid.has_value());
  EXPECT_FALSE(snap->roots[0].owner_gid.has_value());
  usleep(20 * 1000);
  Do(absl::StrCat("touch ", Q(P("f")), " && chown 1234:1234 ", Q(P("f"))));
  ScanReport r = End(*snap);
  EXPECT_EQ(OwnerOf(P("f")), (Owner{1234, 1234}));
  EXPECT_TRUE(r.handed_back.empty());
}

}  // namespace
}  // namespace lazaret::cli::workspace
