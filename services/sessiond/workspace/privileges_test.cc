// Setuid/setgid bits and file capabilities (privileges.h): the periodic
// sweep and the end scan.
#include "services/sessiond/workspace/privileges.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/workspace/scan.h"
#include "services/sessiond/workspace/snapshot.h"
#include "services/sessiond/workspace/test_fixture.h"

namespace lazaret::cli::workspace {
namespace {

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

}  // namespace
}  // namespace lazaret::cli::workspace
