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

uint64_t SizeOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

constexpr AuditLogOptions kSmall{.max_file_bytes = kMinAuditFileBytes, .max_files = 3};

TEST(AuditRotationTest, TheLogRotatesAtItsSizeAndKeepsAtMostItsFiles) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path, kSmall);
  ASSERT_TRUE(log.ok()) << log.status();
  // About 2 KiB a line, ten files' worth.
  for (int i = 0; i < 640; ++i) {
    pb::AuditRecord r = Record("0123456789ab", absl::StrCat("r", i));
    r.set_justification(std::string(2000, 'j'));
    ASSERT_TRUE((*log)->Append(r).ok()) << i;
  }
  EXPECT_TRUE(Exists(path));
  EXPECT_TRUE(Exists(path + ".1"));
  EXPECT_TRUE(Exists(path + ".2"));
  EXPECT_FALSE(Exists(path + ".3"));
  for (const std::string& p : {path, path + ".1", path + ".2"}) {
    EXPECT_LE(SizeOf(p), kSmall.max_file_bytes) << p;
    EXPECT_EQ(ModeOf(p), 0600u) << p;
  }
  // The newest record is in audit.jsonl, and nothing newer was dropped.
  auto read = ReadAudit(path, "", 0);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_FALSE(read->records.empty());
  EXPECT_EQ(read->records.back().request_id(), "r639");
  EXPECT_EQ(read->scan.unparsable, 0u);
}

// A flood of the largest records there are - the agent's longest command,
// made of characters JSON writes six bytes for - stays within the budget.
TEST(AuditRotationTest, AFloodOfHugeRecordsStaysWithinTheBudget) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path, kSmall);
  ASSERT_TRUE(log.ok()) << log.status();
  for (int i = 0; i < 200; ++i) {
    pb::AuditRecord r = Record("0123456789ab", std::string(64, 'i'));
    r.set_command(std::string(64 << 10, '\x01'));
    r.set_justification(std::string(64 << 10, '\x02'));
    for (int a = 0; a < 2000; ++a) r.add_argv(std::string(32, '\x03'));
    ASSERT_TRUE((*log)->Append(r).ok()) << i;
  }
  uint64_t total = 0;
  for (uint32_t k = 0; k < 10; ++k) {
    total += SizeOf(k == 0 ? path : absl::StrCat(path, ".", k));
  }
  EXPECT_LE(total, kSmall.max_file_bytes * kSmall.max_files);
  EXPECT_FALSE(Exists(path + ".3"));
}

TEST(AuditLineCapTest, LongFieldsAreCutWithAMarkerAndTheirFullLength) {
  pb::AuditRecord r = Record("0123456789ab", "long");
  r.set_justification(std::string(1 << 20, 'j'));
  r.set_command(std::string(100, 'c'));
  r.clear_argv();
  for (int i = 0; i < 100000; ++i) r.add_argv("a");
  absl::StatusOr<std::string> line = CappedAuditLine(r);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_LT(line->size(), kAuditLineCap);
  absl::StatusOr<pb::AuditRecord> back = ParseAuditLine(*line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(absl::EndsWith(back->justification(), kAuditCutMarker));
  EXPECT_EQ(back->truncated_bytes().at("justification"), 1u << 20);
  EXPECT_EQ(back->command(), std::string(100, 'c'));  // short fields stay whole
  EXPECT_FALSE(back->truncated_bytes().contains("command"));
  EXPECT_EQ(back->argv(back->argv_size() - 1), kAuditCutMarker);
  EXPECT_EQ(back->truncated_bytes().at("argv[]") + back->argv_size() - 1, 100000u);
}

TEST(AuditLineCapTest, ARecordThatFitsIsWrittenWhole) {
  pb::AuditRecord r = Record("0123456789ab", "whole");
  r.set_justification(std::string(30000, 'j'));
  absl::StatusOr<std::string> capped = CappedAuditLine(r);
  absl::StatusOr<std::string> whole = AuditLine(r);
  ASSERT_TRUE(capped.ok() && whole.ok());
  EXPECT_EQ(*capped, *whole);
}

TEST(AuditLineCapTest, ACutNeverSplitsAUtf8Character) {
  pb::AuditRecord r = Record("0123456789ab", "utf8");
  std::string text;
  while (text.size() < (200 << 10)) text += "\xc3\xa9\xe2\x82\xac";  // é€
  r.set_justification(text);
  absl::StatusOr<std::string> line = CappedAuditLine(r);
  ASSERT_TRUE(line.ok()) << line.status();
  // protobuf's JSON parser refuses invalid UTF-8: a split character would
  // make the line unreadable.
  absl::StatusOr<pb::AuditRecord> back = ParseAuditLine(*line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(absl::EndsWith(back->justification(), kAuditCutMarker));
}

// The file moved away and a directory put in its place (or a symlink, or
// a full disk): the append fails, it is not written anywhere else, and the
// log works again once the path is a file again.
TEST(AuditLogTest, AReplacedFileFailsTheAppendUntilThePathIsAFileAgain) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append(Record("0123456789ab", "before")).ok());
  ASSERT_EQ(rename(path.c_str(), (dir.path() + "/moved").c_str()), 0);
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  EXPECT_FALSE((*log)->Append(Record("0123456789ab", "blocked")).ok());
  ASSERT_EQ(rmdir(path.c_str()), 0);
  ASSERT_EQ(symlink((dir.path() + "/moved").c_str(), path.c_str()), 0);
  absl::Status through_link = (*log)->Append(Record("0123456789ab", "via-link"));
  EXPECT_FALSE(through_link.ok());
  EXPECT_TRUE(absl::StrContains(through_link.message(), "symlink")) << through_link;
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_TRUE((*log)->Append(Record("0123456789ab", "after")).ok());
  const std::string moved = test::ReadFile(dir.path() + "/moved");
  EXPECT_TRUE(absl::StrContains(moved, "before"));
  EXPECT_FALSE(absl::StrContains(moved, "blocked"));
  EXPECT_FALSE(absl::StrContains(moved, "via-link"));
  auto read = ReadAudit(path, "", 0);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->records.size(), 1u);
  EXPECT_EQ(read->records[0].request_id(), "after");
}

// The durable-first rule: what would start the command runs only after
// its record is on disk, and never when the record cannot be written.
TEST(AppendThenRunTest, NothingRunsWhenTheLogCannotBeWritten) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
  pb::AuditRecord start = Record("0123456789ab", "start");
  start.set_phase(pb::AuditRecord::PHASE_STARTED);
  bool ran = false;
  absl::Status st = AppendThenRun(**log, start, [&] { ran = true; });
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(ran);
}

TEST(AppendThenRunTest, TheRecordIsInTheFileBeforeTheCommandStarts) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path);
  ASSERT_TRUE(log.ok()) << log.status();
  pb::AuditRecord start = Record("0123456789ab", "start");
  start.set_phase(pb::AuditRecord::PHASE_STARTED);
  std::string seen_at_start;
  ASSERT_TRUE(AppendThenRun(**log, start, [&] { seen_at_start = test::ReadFile(path); }).ok());
  EXPECT_TRUE(absl::StrContains(seen_at_start, "\"phase\":\"PHASE_STARTED\"")) << seen_at_start;
  EXPECT_TRUE(absl::StrContains(seen_at_start, "\"request_id\":\"start\"")) << seen_at_start;
}

// A full filesystem: the write fails and nothing runs (root mounts a
// tmpfs of 64 KiB for it).
TEST(AppendThenRunTest, NothingRunsWhenTheDiskIsFull) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs (CI runs as root)";
  test::TempDir dir;
  const std::string mnt = dir.path() + "/full";
  ASSERT_EQ(mkdir(mnt.c_str(), 0700), 0);
  ASSERT_EQ(test::Run({"mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt}).exit_code,
            0);
  const std::string path = mnt + "/audit.jsonl";
  auto log = AuditLog::Open(path);
  ASSERT_TRUE(log.ok()) << log.status();
  (void)test::Run({"dd", "if=/dev/zero", "of=" + mnt + "/filler", "bs=4k", "count=64"});
  pb::AuditRecord start = Record("0123456789ab", "start");
  start.set_justification(std::string(8192, 'j'));
  bool ran = false;
  absl::Status st = AppendThenRun(**log, start, [&] { ran = true; });
  test::Run({"umount", mnt});
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(ran);
}

TEST(AuditReaderTest, ReadsAcrossRotationsOldestFirstWithLastSpanningFiles) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path, {.max_file_bytes = kMinAuditFileBytes, .max_files = 4});
  ASSERT_TRUE(log.ok()) << log.status();
  for (int i = 0; i < 150; ++i) {
    pb::AuditRecord r = Record(i % 2 == 0 ? "0123456789ab" : "ba9876543210", absl::StrCat(i));
    r.set_justification(std::string(2000, 'j'));
    ASSERT_TRUE((*log)->Append(r).ok());
  }
  ASSERT_TRUE(Exists(path + ".2"));
  auto all = ReadAudit(path, "", 0);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->records.size(), 150u);
  for (size_t i = 0; i < all->records.size(); ++i) {
    EXPECT_EQ(all->records[i].request_id(), absl::StrCat(i));
  }
  // The last 70 of one session: more than audit.jsonl alone holds.
  auto last = ReadAudit(path, "0123456789ab", 70);
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_EQ(last->records.size(), 70u);
  EXPECT_EQ(last->records.front().request_id(), "10");
  EXPECT_EQ(last->records.back().request_id(), "148");
}

TEST(AuditLogOptionsTest, EnvironmentValuesAreParsedAndBounded) {
  auto d = AuditLogOptionsFromEnv(nullptr, "");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->max_file_bytes, kDefaultAuditFileBytes);
  EXPECT_EQ(d->max_files, kDefaultAuditFiles);
  auto m = AuditLogOptionsFromEnv("32M", "8");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->max_file_bytes, 32ull << 20);
  EXPECT_EQ(m->max_files, 8u);
  EXPECT_EQ(AuditLogOptionsFromEnv("262144", nullptr)->max_file_bytes, 262144u);
  for (const char* bad : {"1k", "x", "-5", "+1M", "99999999999999999999G"}) {
    auto r = AuditLogOptionsFromEnv(bad, nullptr);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(absl::StrContains(r.status().message(), "LAZARET_AUDIT_MAX_BYTES")) << bad;
  }
  for (const char* bad : {"0", "1001", "two", "-1"}) {
    auto r = AuditLogOptionsFromEnv(nullptr, bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(absl::StrContains(r.status().message(), "LAZARET_AUDIT_FILES")) << bad;
  }
}

pb::AuditRecord Phased(const std::string& id, pb::AuditRecord::Phase phase) {
  pb::AuditRecord r = Record("0123456789ab", id);
  r.set_phase(phase);
  r.set_ran(phase == pb::AuditRecord::PHASE_FINISHED);
  return r;
}

// A command that ran is two lines and shows once: at its end's place, as
// its end; a start whose end never came shows last, as a start. --last
// counts requests, not lines.
TEST(AuditReaderTest, AStartAndItsEndShowAsOneRecord) {
  test::TempDir dir;
  const std::string path = dir.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path, {.max_file_bytes = kMinAuditFileBytes, .max_files = 4});
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append(Phased("a", pb::AuditRecord::PHASE_STARTED)).ok());
  ASSERT_TRUE((*log)->Append(Phased("lost", pb::AuditRecord::PHASE_STARTED)).ok());
  ASSERT_TRUE((*log)->Append(Phased("b", pb::AuditRecord::PHASE_UNSPECIFIED)).ok());
  // Enough lines between a start and its end to rotate the file.
  for (int i = 0; i < 80; ++i) {
    pb::AuditRecord r = Record("ba9876543210", absl::StrCat("other", i));
    r.set_justification(std::string(2000, 'j'));
    ASSERT_TRUE((*log)->Append(r).ok());
  }
  ASSERT_TRUE(Exists(path + ".1"));
  ASSERT_TRUE((*log)->Append(Phased("a", pb::AuditRecord::PHASE_FINISHED)).ok());
  auto read = ReadAudit(path, "0123456789ab", 0);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->records.size(), 3u);
  EXPECT_EQ(read->records[0].request_id(), "b");
  EXPECT_EQ(read->records[1].request_id(), "a");
  EXPECT_EQ(read->records[1].phase(), pb::AuditRecord::PHASE_FINISHED);
  EXPECT_TRUE(read->records[1].ran());
  EXPECT_EQ(read->records[2].request_id(), "lost");
  EXPECT_EQ(read->records[2].phase(), pb::AuditRecord::PHASE_STARTED);
  auto last = ReadAudit(path, "0123456789ab", 2);
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_EQ(last->records.size(), 2u);
  EXPECT_EQ(last->records[0].request_id(), "a");
  EXPECT_EQ(last->records[1].request_id(), "lost");
}

}  // namespace
}  // namespace lazaret::brokerd
