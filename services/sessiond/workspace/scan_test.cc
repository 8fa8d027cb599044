// The end-of-session scan as a whole (scan.h): its limits, and that it
// leaves alone what it finds unchanged.
#include "services/sessiond/workspace/scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sessiond/workspace/privileges.h"
#include "services/sessiond/workspace/snapshot.h"
#include "services/sessiond/workspace/test_fixture.h"

namespace lazaret::cli::workspace {
namespace {

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

}  // namespace
}  // namespace lazaret::cli::workspace
