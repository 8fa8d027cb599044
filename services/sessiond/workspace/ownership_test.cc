// The rootful ownership hand-back (ownership.h): the periodic sweep and
// the end scan.
#include "services/sessiond/workspace/ownership.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/workspace/privileges.h"
#include "services/sessiond/workspace/scan.h"
#include "services/sessiond/workspace/snapshot.h"
#include "services/sessiond/workspace/test_fixture.h"

namespace lazaret::cli::workspace {
namespace {

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
