#include "services/brokerd/audit_log.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/support/test_support.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

pb::AuditRecord Record(const std::string& session, const std::string& id) {
  pb::AuditRecord r;
  r.set_time("2026-12-01T17:00:00Z");
  r.set_session_id(session);
  r.set_request_id(id);
  r.add_argv("echo");
  r.add_argv("line\nbreak\x1b[31m");
  r.set_justification("why\r\n");
  r.set_decision(pb::AuditRecord::DECISION_APPROVED);
  r.set_ran(true);
  return r;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(AuditLogTest, CreatesOwnerOnlyDirectoryAndFile) {
  test::TempDir dir;
  const std::string path = dir.path() + "/state/lazaret/audit.jsonl";
  auto log = AuditLog::Open(path);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(ModeOf(dir.path() + "/state/lazaret"), 0700u);
  EXPECT_EQ(ModeOf(path), 0600u);
}

TEST(AuditLogTest, OpenedTwiceBothAppend) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto first = AuditLog::Open(path);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE((*first)->Append(Record("0123456789ab", "one")).ok());
  auto second = AuditLog::Open(path);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE((*second)->Append(Record("0123456789ab", "two")).ok());
  ASSERT_TRUE((*first)->Append(Record("ba9876543210", "three")).ok());
  auto read = ReadAudit(path, "", 0);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->records.size(), 3u);
  EXPECT_EQ(read->records[0].request_id(), "one");
  EXPECT_EQ(read->records[1].request_id(), "two");
  EXPECT_EQ(read->records[2].request_id(), "three");
  EXPECT_EQ(read->records[0].argv(1), "line\nbreak\x1b[31m");
  EXPECT_EQ(read->scan.unparsable, 0u);
}

TEST(AuditLogTest, SymlinkIsRefused) {
  test::TempDir dir;
  const std::string target = dir.path() + "/elsewhere";
  std::ofstream(target) << "";
  const std::string path = dir.path() + "/audit.jsonl";
  ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0);
  auto log = AuditLog::Open(path);
  ASSERT_FALSE(log.ok());
  EXPECT_TRUE(absl::StrContains(log.status().message(), "symlink")) << log.status();
  EXPECT_EQ(ReadAudit(path, "", 0).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(AuditLogTest, SymlinkedDirectoryIsRefused) {
  test::TempDir dir;
  ASSERT_EQ(mkdir((dir.path() + "/real").c_str(), 0700), 0);
  ASSERT_EQ(symlink((dir.path() + "/real").c_str(), (dir.path() + "/lazaret").c_str()), 0);
  EXPECT_FALSE(AuditLog::Open(dir.path() + "/lazaret/audit.jsonl").ok());
}

TEST(AuditLogTest, HardLinkedFileIsRefused) {
  test::TempDir dir;
  const std::string other = dir.path() + "/other";
  std::ofstream(other) << "";
  const std::string path = dir.path() + "/audit.jsonl";
  ASSERT_EQ(link(other.c_str(), path.c_str()), 0);
  EXPECT_FALSE(AuditLog::Open(path).ok());
}

TEST(AuditLogTest, FileNotOursIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a file owned by another uid";
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  std::ofstream(path) << "";
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
  auto log = AuditLog::Open(path);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(AuditLogTest, LooseModeIsTightened) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  std::ofstream(path) << "";
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  ASSERT_TRUE(AuditLog::Open(path).ok());
  EXPECT_EQ(ModeOf(path), 0600u);
}

TEST(AuditLogTest, EveryLineIsOneRecordWithProtoFieldNames) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Append(Record("0123456789ab", "a")).ok());
  std::string contents = test::ReadFile(path);
  std::vector<std::string> lines = absl::StrSplit(contents, '\n');
  ASSERT_EQ(lines.size(), 2u);  // one line and the empty rest after its newline
  EXPECT_EQ(lines[1], "");
  EXPECT_TRUE(absl::StrContains(lines[0], "\"session_id\":\"0123456789ab\"")) << lines[0];
  EXPECT_TRUE(absl::StrContains(lines[0], "\"decision\":\"DECISION_APPROVED\"")) << lines[0];
  EXPECT_TRUE(ParseAuditLine(lines[0]).ok());
}

TEST(AuditLogTest, ConcurrentAppendersNeverInterleaveALine) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto a = AuditLog::Open(path);
  auto b = AuditLog::Open(path);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<std::thread> threads;
  constexpr int kThreads = 8;
  constexpr int kEach = 50;
  for (int t = 0; t < kThreads; ++t) {
    AuditLog* log = (t % 2 == 0) ? a->get() : b->get();
    threads.emplace_back([log, t] {
      for (int i = 0; i < kEach; ++i) {
        pb::AuditRecord r = Record("0123456789ab", absl::StrCat("t", t, "-", i));
        r.set_command(std::string(8192 + t * 100, 'x'));  // larger than a pipe-sized write
        ASSERT_TRUE(log->Append(r).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  auto read = ReadAudit(path, "", 0);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->scan.unparsable, 0u);
  EXPECT_EQ(read->records.size(), static_cast<size_t>(kThreads * kEach));
}

TEST(AuditReaderTest, FiltersBySessionKeepsTheLastAndCountsBadLines) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  {
    auto log = AuditLog::Open(path);
    ASSERT_TRUE(log.ok());
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE((*log)->Append(Record("0123456789ab", absl::StrCat("a", i))).ok());
      ASSERT_TRUE((*log)->Append(Record("ba9876543210", absl::StrCat("b", i))).ok());
    }
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "not json\n{\"unknown_field\":1}\n";
  }
  auto read = ReadAudit(path, "0123456789ab", 2);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->records.size(), 2u);
  EXPECT_EQ(read->records[0].request_id(), "a3");
  EXPECT_EQ(read->records[1].request_id(), "a4");
  EXPECT_EQ(read->scan.records, 10u);
  EXPECT_EQ(read->scan.unparsable, 2u);
  EXPECT_EQ(read->scan.unparsable_lines, (std::vector<uint64_t>{11, 12}));
}

TEST(AuditReaderTest, MissingLogIsNotFound) {
  test::TempDir dir;
  EXPECT_EQ(ReadAudit(dir.path() + "/none.jsonl", "", 0).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(AuditReaderTest, DefaultPathHonoursOverrideThenXdgStateHome) {
  const char* saved_log = getenv("LAZARET_AUDIT_LOG");
  const char* saved_state = getenv("XDG_STATE_HOME");
  std::string keep_log = saved_log ? saved_log : "";
  std::string keep_state = saved_state ? saved_state : "";
  setenv("LAZARET_AUDIT_LOG", "/tmp/x/audit.jsonl", 1);
  EXPECT_EQ(DefaultAuditPath(), "/tmp/x/audit.jsonl");
  unsetenv("LAZARET_AUDIT_LOG");
  setenv("XDG_STATE_HOME", "/srv/state", 1);
  EXPECT_EQ(DefaultAuditPath(), "/srv/state/lazaret/audit.jsonl");
  setenv("XDG_STATE_HOME", "relative", 1);
  EXPECT_TRUE(absl::EndsWith(DefaultAuditPath(), "/.local/state/lazaret/audit.jsonl"));
  if (saved_log) setenv("LAZARET_AUDIT_LOG", keep_log.c_str(), 1);
  if (saved_state) {
    setenv("XDG_STATE_HOME", keep_state.c_str(), 1);
  } else {
    unsetenv("XDG_STATE_HOME");
  }
}

}  // namespace
}  // namespace lazaret::brokerd
