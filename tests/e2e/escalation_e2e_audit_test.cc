// The bounded audit and the locations no other user can take (issue 20
// items 5 and 6), end to end: the real lazaret-escalate inside a real
// sandbox asks the real lazaret-brokerd.
//  - Durable first: with the audit log made unwritable (a directory where
//    the file was), neither an approved nor an auto-approved command runs -
//    the host shows no trace of it - and the agent is told why; once the
//    file is back, commands run again and `lazaret audit` shows each once.
//  - Capped: with the services started with a small cap
//    (LAZARET_AUDIT_MAX_BYTES, LAZARET_AUDIT_FILES passed by `lazaret up`),
//    a flood of long refused requests leaves the log within it.
//  - Squatted paths: another real local user (nobody) creates the old
//    predictable /dev/shm/lazaret-<uid> and /tmp/lazaret-<uid> (and a
//    symlink of the new form) before the services start; they still start,
//    with and without XDG_RUNTIME_DIR, and escalation works.
// These tests restart the mode's service set and leave it up with the
// fixture's environment. The same binary runs rootful and rootless
// (LAZARET_E2E_MODE). Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tests/e2e/escalation_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;

constexpr uid_t kOtherUid = 65534;  // nobody: a real local user, not the victim

::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new EscWorldEnvironment);

std::string AuditPath() { return Env().home + "/.local/state/lazaret/audit.jsonl"; }

bool Exists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

struct stat Lstat(const std::string& p) {
  struct stat st {};
  st.st_mode = 0;
  lstat(p.c_str(), &st);
  return st;
}

// `lazaret down`, then `lazaret up` with `extra` in its environment; the
// error of either, or "".
std::string RestartServices(const std::map<std::string, std::string>& extra = {}) {
  CommandResult down = Lazaret("/", {"down"});
  if (down.exit_code != 0) return "lazaret down: " + down.err;
  CommandResult up = Lazaret("/", {"up"}, extra);
  if (up.exit_code != 0) return "lazaret up: " + up.err;
  return "";
}

// A session of the esc profile (auto_approve "uname -s"), or why not.
std::unique_ptr<net::NetSession> StartSession(std::string* workspace, std::string* error) {
  absl::StatusOr<std::unique_ptr<net::NetSession>> s =
      EscWorld::Get().StartOwn(EscWorld::Get().config(), kProfile, workspace);
  if (!s.ok()) {
    *error = std::string(s.status().message());
    return nullptr;
  }
  return *std::move(s);
}

class AuditE2eTest : public EscE2eTest {
 protected:
  static void TearDownTestSuite() {
    // Whatever a test did, the mode's services are left as the fixture
    // started them.
    EXPECT_EQ(RestartServices(), "");
  }
};

TEST_F(AuditE2eTest, NothingRunsWhileTheAuditLogCannotBeWritten) {
  std::string ws, error;
  std::unique_ptr<net::NetSession> s = StartSession(&ws, &error);
  ASSERT_NE(s, nullptr) << error;
  // The log exists and works.
  CommandResult first = Escalate(*s, {"--", "uname", "-s"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string log = AuditPath();
  ASSERT_TRUE(Exists(log)) << log;

  // A directory where the file was: the broker cannot open it again, and
  // must not write anywhere else.
  const std::string aside = log + ".e2e-aside";
  ASSERT_EQ(rename(log.c_str(), aside.c_str()), 0);
  ASSERT_EQ(mkdir(log.c_str(), 0700), 0);
  const std::string marker = EscWorld::Get().scratch().path() + "/" + NewId("durable-");
  auto approver = ScriptedApprover::Start(
      {"--session=" + s->id(), "--argv0=touch", "--approve", "--count=1", "--timeout=60"});
  CommandResult approved = Escalate(*s, {"--", "touch", marker});
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  CommandResult automatic = Escalate(*s, {"--", "uname", "-s"});
  rmdir(log.c_str());
  ASSERT_EQ(rename(aside.c_str(), log.c_str()), 0);

  EXPECT_NE(approved.exit_code, 0) << approved.out;
  EXPECT_THAT(approved.err, HasSubstr("audit log could not be written"));
  EXPECT_FALSE(Exists(marker)) << "the approved command ran without its audit record";
  EXPECT_NE(automatic.exit_code, 0) << automatic.out;
  EXPECT_EQ(automatic.out, "") << "the auto-approved command ran without its audit record";
  EXPECT_THAT(automatic.err, HasSubstr("audit log could not be written"));

  // The file back: commands run and are audited again, each shown once.
  auto approver2 = ScriptedApprover::Start(
      {"--session=" + s->id(), "--argv0=touch", "--approve", "--count=1", "--timeout=60"});
  CommandResult again = Escalate(*s, {"--", "touch", marker});
  EXPECT_EQ(approver2->Wait(30), 0) << approver2->Log();
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(Exists(marker));
  unlink(marker.c_str());
  ASSERT_AUDIT(records, s->id());
  std::vector<AuditRecord> touched = WithArgv(records, {"touch", marker});
  ASSERT_EQ(touched.size(), 1u) << "a command that ran is one record in lazaret audit";
  EXPECT_TRUE(touched[0].ran());
  EXPECT_EQ(touched[0].phase(), AuditRecord::PHASE_FINISHED);
  // On disk it is two lines, its start first.
  int started_line = -1, finished_line = -1, n = 0;
  for (absl::string_view line : absl::StrSplit(ReadFile(log), '\n')) {
    if (absl::StrContains(line, "\"" + marker + "\"")) {
      if (absl::StrContains(line, "\"PHASE_STARTED\"") && started_line < 0) started_line = n;
      if (absl::StrContains(line, "\"PHASE_FINISHED\"")) finished_line = n;
    }
    ++n;
  }
  EXPECT_GE(started_line, 0) << "no start record on disk";
  EXPECT_GT(finished_line, started_line);
  s->End();
}

TEST_F(AuditE2eTest, AFloodOfLongRefusedRequestsStaysWithinTheCap) {
  constexpr uint64_t kFileBytes = 128 << 10;
  constexpr int kFiles = 2;
  const std::string log = AuditPath();
  // Older rotations of earlier runs (a bigger cap) are not this broker's.
  std::map<std::string, std::pair<ino_t, off_t>> older;
  for (int k = kFiles; k < 10; ++k) {
    const std::string p = absl::StrCat(log, ".", k);
    if (Exists(p)) older[p] = {Lstat(p).st_ino, Lstat(p).st_size};
  }
  ASSERT_EQ(RestartServices({{"LAZARET_AUDIT_MAX_BYTES", std::to_string(kFileBytes)},
                             {"LAZARET_AUDIT_FILES", std::to_string(kFiles)}}),
            "");
  std::string ws, error;
  std::unique_ptr<net::NetSession> s = StartSession(&ws, &error);
  ASSERT_NE(s, nullptr) << error;
  // Each request names a program that does not exist with an argument of
  // 60,000 bytes: refused, and audited with its argv - about 60 KiB a
  // line, some 3 MiB in all without a cap.
  const std::string program = "/nonexistent-lazaret-audit-flood";
  uint64_t answered = 0;
  for (int round = 0; round < 3; ++round) {
    CommandResult r = Raw(
        *s, {"flood", "--n", "40", "--parallel", "4", "--argv", program, std::string(60000, 'a')});
    std::map<std::string, std::string> kv = RawSummary(r.out, "flood");
    ASSERT_FALSE(kv.empty()) << r.out << r.err;
    EXPECT_EQ(kv["ran"], "0") << r.out;
    EXPECT_EQ(kv["answered"], "40") << r.out << r.err;
    answered += std::stoul(kv["answered"]);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  EXPECT_EQ(answered, 120u);
  uint64_t total = 0;
  for (int k = 0; k < kFiles; ++k) {
    const std::string p = k == 0 ? log : absl::StrCat(log, ".", k);
    ASSERT_TRUE(Exists(p)) << p << ": the flood did not even rotate the log";
    EXPECT_LE(static_cast<uint64_t>(Lstat(p).st_size), kFileBytes) << p;
    total += Lstat(p).st_size;
  }
  EXPECT_LE(total, kFileBytes * kFiles);
  for (const auto& [p, was] : older) {
    EXPECT_EQ(Lstat(p).st_ino, was.first) << p << " was touched by a broker keeping " << kFiles;
    EXPECT_EQ(Lstat(p).st_size, was.second) << p;
  }
  if (const std::string beyond = absl::StrCat(log, ".", kFiles); older.count(beyond) == 0) {
    EXPECT_FALSE(Exists(beyond)) << "a file beyond the cap appeared";
  }
  // The log still reads, and its newest records are the flood's.
  ASSERT_AUDIT(records, s->id());
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back().argv(0), program);
  EXPECT_EQ(DecisionName(records.back()), "DECISION_REFUSED");
  s->End();
  EXPECT_EQ(RestartServices(), "");
}

// What another user can create first: the old predictable names, and a
// symlink of the new form. nobody creates them before the services start.
TEST_F(AuditE2eTest, PathsAnotherUserCreatedFirstBlockNoSession) {
  const uid_t victim = Env().uid;
  const std::vector<std::string> squats = {
      absl::StrCat("/dev/shm/lazaret-", victim),
      absl::StrCat("/tmp/lazaret-", victim),
  };
  const std::string planted_link = absl::StrCat("/dev/shm/lazaret-", victim, ".AAAAAA");
  ASSERT_EQ(Lazaret("/", {"down"}).exit_code, 0);
  for (const std::string& p : squats) test::Run({"rm", "-rf", p});
  test::Run({"rm", "-f", planted_link});
  const std::vector<std::string> as_other = {"setpriv", "--reuid=65534", "--regid=65534",
                                             "--clear-groups", "--"};
  for (const std::string& p : squats) {
    std::vector<std::string> argv = as_other;
    argv.insert(argv.end(), {"mkdir", "-m", "0777", p});
    ASSERT_EQ(test::Run(argv).exit_code, 0) << p;
  }
  {
    std::vector<std::string> argv = as_other;
    argv.insert(argv.end(), {"ln", "-s", squats[0], planted_link});
    ASSERT_EQ(test::Run(argv).exit_code, 0);
  }
  for (const std::string& p : squats) ASSERT_EQ(Lstat(p).st_uid, kOtherUid) << p;

  // Without XDG_RUNTIME_DIR (or LAZARET_RUNTIME_DIR) the services start,
  // in a runtime directory nobody else could have created.
  UserDir state("escaud-state");
  const std::map<std::string, std::string> no_xdg = {
      {"XDG_RUNTIME_DIR", ""}, {"LAZARET_RUNTIME_DIR", ""}, {"XDG_STATE_HOME", state.path()}};
  CommandResult up = Lazaret("/", {"up"}, no_xdg);
  CommandResult status = Lazaret("/", {"status"}, no_xdg);
  CommandResult down = Lazaret("/", {"down"}, no_xdg);
  EXPECT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_EQ(down.exit_code, 0) << down.err;
  const std::string fallback =
      victim == 0 ? std::string("/run/lazaret") : state.path() + "/lazaret/run";
  EXPECT_TRUE(S_ISDIR(Lstat(fallback).st_mode)) << fallback;
  EXPECT_EQ(Lstat(fallback).st_uid, victim) << fallback;

  // The fixture's environment: a session with escalation starts and works.
  ASSERT_EQ(Lazaret("/", {"up"}).exit_code, 0);
  std::string ws, error;
  std::unique_ptr<net::NetSession> s = StartSession(&ws, &error);
  EXPECT_NE(s, nullptr) << error;
  if (s != nullptr) {
    CommandResult r = Escalate(*s, {"--", "uname", "-s"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "Linux\n");
    const std::string certs = HostMountSource(*s, "/run/lazaret/certs");
    EXPECT_TRUE(absl::StartsWith(certs, absl::StrCat("/dev/shm/lazaret-", victim, "."))) << certs;
    EXPECT_FALSE(absl::StartsWith(certs, planted_link)) << certs;
    const struct stat root = Lstat(certs.substr(0, certs.rfind('/')));
    EXPECT_TRUE(S_ISDIR(root.st_mode));
    EXPECT_EQ(root.st_uid, victim);
    EXPECT_EQ(root.st_mode & 07777, 0700u);
    s->End();
  }
  // What nobody made is as it was: nothing of the victim's went there.
  for (const std::string& p : squats) {
    EXPECT_EQ(Lstat(p).st_uid, kOtherUid) << p;
    EXPECT_EQ(test::Run({"find", p, "-mindepth", "1"}).out, "") << p;
  }
  EXPECT_TRUE(S_ISLNK(Lstat(planted_link).st_mode));
  for (const std::string& p : squats) test::Run({"rm", "-rf", p});
  test::Run({"rm", "-f", planted_link});
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
