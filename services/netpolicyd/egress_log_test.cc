#include "services/netpolicyd/egress_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;

constexpr char kId[] = "0123456789ab";

pb::LogEntry Refused(const std::string& name) {
  pb::LogEntry e;
  e.set_kind(pb::LOG_KIND_NAME_REFUSED);
  e.set_name(name);
  e.set_detail("not listed");
  return e;
}

off_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

class EgressLogTest : public ::testing::Test {
 protected:
  EgressLogOptions Options() {
    EgressLogOptions o;
    o.dir = tmp_.path() + "/netlog";
    return o;
  }
  test::TempDir tmp_{"elog"};
};

TEST_F(EgressLogTest, ReadsEndedSessionFromFile) {
  {
    EgressLog log(kId, Options());
    log.Append(Refused("a.example.test"));
    log.Append(Refused("b.example.\\010test"));
  }  // the session ended: the writer flushed and stopped
  struct stat st;
  ASSERT_EQ(stat((Options().dir + "/" + kId + ".jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(Options().dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto entries = ReadEgressLogFile(Options().dir, kId);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].name(), "a.example.test");
  EXPECT_EQ((*entries)[0].seq(), 1u);
  EXPECT_EQ((*entries)[0].session_id(), kId);
  EXPECT_GT((*entries)[0].time_unix_ms(), 0);
  EXPECT_EQ((*entries)[1].name(), "b.example.\\010test");
  EXPECT_EQ((*entries)[1].seq(), 2u);
  EXPECT_TRUE(absl::IsNotFound(ReadEgressLogFile(Options().dir, "ba9876543210").status()));
  // Attached again (a restarted netpolicyd): the file's numbering goes on.
  {
    EgressLog again(kId, Options());
    again.Append(Refused("c.example.test"));
  }
  entries = ReadEgressLogFile(Options().dir, kId);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[2].seq(), 3u);
}

TEST_F(EgressLogTest, RotatesAtCap) {
  EgressLogOptions o = Options();
  o.file_cap = 4096;
  {
    EgressLog log(kId, o);
    for (int i = 0; i < 200; ++i) log.Append(Refused(absl::StrCat("n", i, ".example.test")));
  }
  const std::string base = o.dir + "/" + kId + ".jsonl";
  EXPECT_GT(FileSize(base), 0);
  EXPECT_LE(FileSize(base), 4096);
  EXPECT_GT(FileSize(base + ".1"), 0);
  EXPECT_LE(FileSize(base + ".2"), 4096);
  EXPECT_LT(FileSize(base + ".3"), 0) << "only two rotations are kept";
  auto entries = ReadEgressLogFile(o.dir, kId);
  ASSERT_TRUE(entries.ok());
  ASSERT_FALSE(entries->empty());
  EXPECT_LT(entries->size(), 200u);
  // Oldest first, the newest kept.
  EXPECT_EQ(entries->back().name(), "n199.example.test");
  for (size_t i = 1; i < entries->size(); ++i) {
    EXPECT_EQ((*entries)[i].seq(), (*entries)[i - 1].seq() + 1);
  }
}

TEST_F(EgressLogTest, GcKeepsLast100) {
  const std::string dir = Options().dir;
  for (int i = 0; i < 103; ++i) {
    EgressLog log(absl::StrCat("0000000000", i < 10 ? "0" : "", i % 100, i >= 100 ? "x" : ""),
                  Options());
    log.Append(Refused("x.test"));
  }
  // Make the first three the oldest by far.
  for (const char* id : {"000000000000", "000000000001", "000000000002"}) {
    const std::string p = dir + "/" + id + ".jsonl";
    struct timespec old[2] = {{1000, 0}, {1000, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, p.c_str(), old, 0), 0) << p;
  }
  ASSERT_TRUE(CollectEgressLogs(dir, kKeepSessionLogs).ok());
  for (const char* id : {"000000000000", "000000000001", "000000000002"}) {
    EXPECT_TRUE(EgressLogFiles(dir, id).empty()) << id;
  }
  EXPECT_FALSE(EgressLogFiles(dir, "000000000003").empty());
  EXPECT_FALSE(EgressLogFiles(dir, "00000000000x").empty());
}

TEST_F(EgressLogTest, FollowersSeeNewEntries) {
  EgressLog log(kId, EgressLogOptions());
  log.Append(Refused("first.test"));
  uint64_t next = 0;
  ASSERT_EQ(log.Read(&next, std::chrono::milliseconds(0)).size(), 1u);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    log.Append(Refused("second.test"));
  });
  auto got = log.Read(&next, std::chrono::seconds(5));
  writer.join();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name(), "second.test");
  EXPECT_EQ(got[0].seq(), 2u);
  // Closing wakes a waiting follower.
  std::thread closer([&] { log.Close(); });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(log.Read(&next, std::chrono::seconds(10)).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  closer.join();
  EXPECT_TRUE(log.closed());
}

TEST_F(EgressLogTest, WriterOverflowRecordsGap) {
  EgressLogOptions o = Options();
  o.queue = 4;
  // The writer is held (a disk that does not keep up) while 50 entries
  // arrive: 4 wait in the queue, 46 are counted.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  o.before_batch = [released] { released.wait(); };
  EgressLog log(kId, o);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) log.Append(Refused(absl::StrCat("n", i, ".test")));
  // The DNS path never waits for the disk.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // Every entry is still in memory for followers.
  uint64_t next = 0;
  EXPECT_EQ(log.Read(&next, std::chrono::milliseconds(0)).size(), 50u);
  EXPECT_EQ(log.file_drops(), 46u);
  release.set_value();
  log.Close();
  auto entries = ReadEgressLogFile(o.dir, kId);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 5u);
  EXPECT_EQ((*entries)[0].name(), "n0.test");
  EXPECT_EQ((*entries)[3].name(), "n3.test");
  EXPECT_EQ((*entries)[4].kind(), pb::LOG_KIND_LOG_GAP);
  EXPECT_EQ((*entries)[4].count(), 46u);
}

}  // namespace
}  // namespace lazaret::netpolicyd
