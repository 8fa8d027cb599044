// The snapshot of git directories before the sandbox starts (snapshot.h).
#include "services/sessiond/workspace/snapshot.h"

#include <gtest/gtest.h>

#include <string>

#include "services/sessiond/workspace/test_fixture.h"

namespace lazaret::cli::workspace {
namespace {

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

}  // namespace
}  // namespace lazaret::cli::workspace
