#include "clients/lazaret/escalation/audit_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace lazaret::cli::escalation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(AuditLogPathTest, ExplicitThenXdgStateThenHome) {
  EXPECT_EQ(*AuditLogPath(Env(
                {{"LAZARET_AUDIT_LOG", "/a/log.jsonl"}, {"XDG_STATE_HOME", "/s"}, {"HOME", "/h"}})),
            "/a/log.jsonl");
  EXPECT_EQ(*AuditLogPath(Env({{"XDG_STATE_HOME", "/s"}, {"HOME", "/h"}})),
            "/s/lazaret/audit.jsonl");
  EXPECT_EQ(*AuditLogPath(Env({{"HOME", "/h"}})), "/h/.local/state/lazaret/audit.jsonl");
  // Relative or empty values do not count.
  EXPECT_EQ(
      *AuditLogPath(Env({{"LAZARET_AUDIT_LOG", ""}, {"XDG_STATE_HOME", "rel"}, {"HOME", "/h"}})),
      "/h/.local/state/lazaret/audit.jsonl");
  EXPECT_FALSE(AuditLogPath(Env({})).ok());
}

std::string Line(const std::string& session, const std::string& request) {
  return "{\"time\":\"2026-12-01T17:00:00Z\",\"session_id\":\"" + session + "\",\"request_id\":\"" +
         request + "\",\"decision\":\"DECISION_DENIED\"}";
}

class ReadAuditFileTest : public ::testing::Test {
 protected:
  void Write(const std::vector<std::string>& lines) {
    std::ofstream f(path_);
    for (const auto& l : lines) f << l << "\n";
  }
  absl::Status Read(const std::string& session, uint32_t last) {
    ids_.clear();
    problems_.clear();
    return ReadAuditFile(
        path_, session, last,
        [this](const AuditEntry& e) {
          ids_.push_back(e.record.request_id());
          json_.push_back(e.json);
        },
        [this](const std::string& p) { problems_.push_back(p); });
  }

  test::TempDir tmp_{"laz-audit"};
  std::string path_ = tmp_.path() + "/audit.jsonl";
  std::vector<std::string> ids_, json_, problems_;
};

TEST_F(ReadAuditFileTest, EveryRecordOldestFirstWithItsLineAsWritten) {
  Write({Line("0123456789ab", "r1"), Line("ba9876543210", "r2"), Line("0123456789ab", "r3")});
  ASSERT_TRUE(Read("", 0).ok());
  EXPECT_THAT(ids_, ElementsAre("r1", "r2", "r3"));
  EXPECT_EQ(json_[1], Line("ba9876543210", "r2"));
  EXPECT_TRUE(problems_.empty());
}

TEST_F(ReadAuditFileTest, SessionThenLastN) {
  Write({Line("0123456789ab", "r1"), Line("ba9876543210", "r2"), Line("0123456789ab", "r3"),
         Line("0123456789ab", "r4"), Line("ba9876543210", "r5")});
  ASSERT_TRUE(Read("0123456789ab", 0).ok());
  EXPECT_THAT(ids_, ElementsAre("r1", "r3", "r4"));
  ASSERT_TRUE(Read("0123456789ab", 2).ok());
  EXPECT_THAT(ids_, ElementsAre("r3", "r4"));
  ASSERT_TRUE(Read("", 2).ok());
  EXPECT_THAT(ids_, ElementsAre("r4", "r5"));
  ASSERT_TRUE(Read("", 100).ok());
  EXPECT_EQ(ids_.size(), 5u);
}

TEST_F(ReadAuditFileTest, ABadLineIsReportedWithItsNumberAndSkipped) {
  // A torn last line (a crash mid-append), garbage, a wrong type.
  Write({Line("0123456789ab", "r1"), "not json", "{\"exit_code\":\"many\"}",
         Line("0123456789ab", "r2"), "{\"time\":\"2026"});
  ASSERT_TRUE(Read("", 0).ok());
  EXPECT_THAT(ids_, ElementsAre("r1", "r2"));
  ASSERT_EQ(problems_.size(), 3u);
  EXPECT_THAT(problems_[0], HasSubstr("audit.jsonl:2: not an audit record"));
  EXPECT_THAT(problems_[1], HasSubstr("audit.jsonl:3: "));
  EXPECT_THAT(problems_[2], HasSubstr("audit.jsonl:5: "));
}

TEST_F(ReadAuditFileTest, FieldsOfANewerBrokerAreIgnored) {
  Write({"{\"session_id\":\"0123456789ab\",\"request_id\":\"r1\",\"added_later\":1}"});
  ASSERT_TRUE(Read("", 0).ok());
  EXPECT_THAT(ids_, ElementsAre("r1"));
}

TEST_F(ReadAuditFileTest, MissingIsNotFoundAndASymlinkOrDirectoryIsRefused) {
  EXPECT_TRUE(absl::IsNotFound(Read("", 0)));
  const std::string real = tmp_.path() + "/real.jsonl";
  std::ofstream(real) << Line("0123456789ab", "r1") << "\n";
  ASSERT_EQ(symlink(real.c_str(), path_.c_str()), 0);
  absl::Status s = Read("", 0);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("symlink"));
  EXPECT_TRUE(ids_.empty());
  ASSERT_EQ(unlink(path_.c_str()), 0);
  ASSERT_EQ(mkdir(path_.c_str(), 0700), 0);
  EXPECT_THAT(std::string(Read("", 0).message()), HasSubstr("not a regular file"));
}

// The broker rotates audit.jsonl to .1, .2, ...: read oldest first, with
// --last counted across the files, and a rotated file that is a symlink
// refused like the log itself.
TEST_F(ReadAuditFileTest, RotatedFilesAreReadOldestFirstAndLastSpansThem) {
  std::ofstream(path_ + ".2") << Line("0123456789ab", "r1") << "\n"
                              << Line("0123456789ab", "r2") << "\n";
  std::ofstream(path_ + ".1") << Line("ba9876543210", "r3") << "\n"
                              << Line("0123456789ab", "r4") << "\n";
  Write({Line("0123456789ab", "r5")});
  ASSERT_TRUE(Read("", 0).ok());
  EXPECT_THAT(ids_, ElementsAre("r1", "r2", "r3", "r4", "r5"));
  ASSERT_TRUE(Read("0123456789ab", 3).ok());
  EXPECT_THAT(ids_, ElementsAre("r2", "r4", "r5"));
  // Only rotated files, the newest just moved away: still read.
  ASSERT_EQ(unlink(path_.c_str()), 0);
  ASSERT_TRUE(Read("", 0).ok());
  EXPECT_THAT(ids_, ElementsAre("r1", "r2", "r3", "r4"));
  ASSERT_EQ(unlink((path_ + ".2").c_str()), 0);
  ASSERT_EQ(symlink("/etc/passwd", (path_ + ".2").c_str()), 0);
  EXPECT_THAT(std::string(Read("", 0).message()), HasSubstr("symlink"));
}

std::string PhasedLine(const std::string& request, const std::string& phase) {
  return "{\"session_id\":\"0123456789ab\",\"request_id\":\"" + request +
         "\",\"decision\":\"DECISION_APPROVED\",\"phase\":\"" + phase + "\"}";
}

TEST_F(ReadAuditFileTest, ACommandThatRanShowsOnceAsItsEnd) {
  std::ofstream(path_ + ".1") << PhasedLine("a", "PHASE_STARTED") << "\n"
                              << PhasedLine("lost", "PHASE_STARTED") << "\n";
  Write({Line("0123456789ab", "b"), PhasedLine("a", "PHASE_FINISHED")});
  ASSERT_TRUE(Read("", 0).ok());
  EXPECT_THAT(ids_, ElementsAre("b", "a", "lost"));
  EXPECT_EQ(json_[1], PhasedLine("a", "PHASE_FINISHED"));
  EXPECT_EQ(json_[2], PhasedLine("lost", "PHASE_STARTED"));
  ASSERT_TRUE(Read("", 2).ok());
  EXPECT_THAT(ids_, ElementsAre("a", "lost"));
}

}  // namespace
}  // namespace lazaret::cli::escalation
