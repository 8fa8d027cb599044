#include "services/sessiond/session/sandbox_writes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace lazaret::cli::session {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

TEST(WriteBackLogTest, EachDistinctLineOnceInTheOrderSeen) {
  WriteBackLog log;
  gitshadow::WriteBackReport r;
  r.imported = {"lazaret/agent-p1 0000 -> 1111"};
  r.rejected = {"refs/heads/main: moved inside the sandbox"};
  r.import_status = absl::InternalError("fetch refused");
  log.Add(r);
  log.Add(r);  // the next tick reports the same
  log.Add(absl::UnavailableError("no git"));
  EXPECT_THAT(log.Lines(),
              ElementsAre("imported lazaret/agent-p1 0000 -> 1111",
                          "not imported: refs/heads/main: moved inside the sandbox",
                          "git import failed: fetch refused", "git write-back failed: no git"));
}

TEST(WriteBackLogTest, AnAgentCannotFloodTheTerminal) {
  WriteBackLog log;
  for (int tick = 0; tick < 3; ++tick) {
    gitshadow::WriteBackReport r;
    for (size_t i = 0; i < WriteBackLog::kMaxLines + 5; ++i) {
      r.removed.push_back(absl::StrCat("objects/", i, ": symlink, removed"));
    }
    log.Add(r);
  }
  const auto lines = log.Lines();
  ASSERT_THAT(lines, SizeIs(WriteBackLog::kMaxLines + 1));
  EXPECT_EQ(lines.front(), "removed from write-back: objects/0: symlink, removed");
  EXPECT_EQ(lines.back(), "5 further distinct messages not shown");
}

}  // namespace
}  // namespace lazaret::cli::session
