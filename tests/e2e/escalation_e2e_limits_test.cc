// The wire's limits from inside a real sandbox: oversized, non-UTF-8, NUL,
// deeply nested, unknown-field and truncated requests are protocol errors
// that run nothing; a replayed request_id runs once; a flood is answered
// once per request and partly refused by the rate limit while the broker
// keeps answering; output is cut at 1 MiB and flagged; a command past the
// host timeout is stopped with its process group. Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "tests/e2e/escalation_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

struct Malformed {
  std::string label;
  std::string payload;
  std::string reason_has;  // a word the refusal must name ("" : any reason)
};

// The real client refuses a request over the limit itself, as a usage error
// naming the limit; the broker's own refusal of such a frame (sent by the raw
// client) is the "70 KiB" case of MalformedRequestsAreProtocolErrorsAndRunNothing.
TEST_F(EscE2eTest, OversizedCommandIsRefusedNamingTheLimit) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string big = "uname -s " + std::string(70 * 1024, 'a');
  CommandResult r = Escalate(*a, {"-c", big});
  EXPECT_EQ(r.exit_code, 244) << r.err;
  EXPECT_THAT(r.err, HasSubstr("65536"));
  EXPECT_EQ(r.out, "");
}

TEST_F(EscE2eTest, MalformedRequestsAreProtocolErrorsAndRunNothing) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string p = kProfile;
  auto head = [&](const std::string& id) {
    return "{\"request_id\":\"" + id + "\",\"profile\":\"" + p + "\",";
  };
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i) ids.push_back(NewId("bad-"));
  const std::vector<Malformed> cases = {
      {"70 KiB", head(ids[0]) + "\"command\":\"uname -s " + std::string(70 * 1024, 'a') + "\"}",
       "65536"},
      {"invalid UTF-8", head(ids[1]) + "\"argv\":[\"uname\",\"-s\xff\xfe\"]}", "utf-8"},
      {"escaped NUL", head(ids[2]) + "\"argv\":[\"uname\",\"-s\\u0000\"]}", "u0000"},
      {"raw NUL", head(ids[3]) + "\"argv\":[\"uname\",\"-s" + std::string(1, '\0') + "\"]}", "nul"},
      {"nested 100 deep",
       head(ids[4]) + "\"argv\":" + std::string(100, '[') + "\"uname\"" + std::string(100, ']') +
           "}",
       ""},
      {"unknown field",
       head(ids[5]) + "\"argv\":[\"uname\",\"-s\"],\"env\":{\"LD_PRELOAD\":\"/x\"}}", "env"},
      {"duplicate key", head(ids[6]) + "\"argv\":[\"uname\",\"-s\"],\"argv\":[\"id\"]}",
       "duplicate"},
  };
  const std::string ws = W().Workspace(Slot::kA);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string file = "bad-" + std::to_string(i) + ".json";
    test::Run({"sh", "-c", "cat > \"$1\"", "sh", ws + "/" + file}, {}, cases[i].payload);
    CommandResult r = Raw(*a, {"send", "--payload-file", "/workspace/" + file});
    RawExchange x = ParseRawExchange(r.out);
    ASSERT_EQ(x.results(), 1) << cases[i].label << ": " << r.out << r.err;
    const EscalateResponse res = x.result();
    EXPECT_TRUE(res.protocol_error()) << cases[i].label << ": " << res.ShortDebugString();
    EXPECT_FALSE(res.approved()) << cases[i].label;
    EXPECT_FALSE(res.reason().empty()) << cases[i].label;
    if (!cases[i].reason_has.empty()) {
      EXPECT_THAT(Lower(res.reason()), HasSubstr(cases[i].reason_has)) << cases[i].label;
    }
  }
  // A frame whose length promises more than comes.
  const std::string trunc_id = NewId("trunc-");
  CommandResult t = Raw(*a, {"send", "--len-override", "1000", "--payload-json",
                             RequestJson(trunc_id, p, {"uname", "-s"})});
  RawExchange tx = ParseRawExchange(t.out);
  EXPECT_TRUE(tx.results() == 0 || tx.result().protocol_error()) << t.out;

  ASSERT_AUDIT(records, a->id());
  ids.push_back(trunc_id);
  for (const auto& id : ids) {
    for (const auto& rec : ByRequestId(records, id)) {
      EXPECT_FALSE(rec.ran()) << id;
      EXPECT_EQ(DecisionName(rec), "DECISION_REFUSED") << id;
    }
  }
}

TEST_F(EscE2eTest, ReplayedRequestIdRunsOnce) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  const std::string id = NewId("replay-");
  CommandResult r = Raw(*a, {"replay", "--id", id, "--argv0", "uname", "-s"});
  RawExchange first = ParseRawExchange(r.out, "1");
  RawExchange second = ParseRawExchange(r.out, "2");
  ASSERT_EQ(first.results(), 1) << r.out << r.err;
  ASSERT_EQ(second.results(), 1) << r.out << r.err;
  EXPECT_TRUE(first.result().approved());
  EXPECT_EQ(first.result().stdout(), "Linux\n");
  EXPECT_FALSE(second.result().approved()) << second.result().ShortDebugString();
  EXPECT_EQ(second.result().stdout(), "");
  EXPECT_THAT(Lower(second.result().reason()), HasSubstr("request_id"));
  ASSERT_AUDIT(records, a->id());
  std::vector<AuditRecord> rec = ByRequestId(records, id);
  EXPECT_EQ(std::count_if(rec.begin(), rec.end(), [](const AuditRecord& x) { return x.ran(); }), 1)
      << "the command must run exactly once";
}

TEST_F(EscE2eTest, FloodIsAnsweredOnceEachAndRateLimited) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  ASSERT_AUDIT(audit_before, a->id());
  CommandResult r = Raw(*a, {"flood", "--n", "200", "--parallel", "50", "--argv", "uname", "-s"});
  std::map<std::string, std::string> kv = RawSummary(r.out, "flood");
  ASSERT_FALSE(kv.empty()) << r.out << r.err;
  EXPECT_EQ(kv["sent"], "200");
  EXPECT_EQ(kv["answered"], "200") << r.out;
  EXPECT_EQ(kv["lost"], "0") << r.out;
  EXPECT_EQ(kv["dup"], "0") << r.out;
  const long ran = std::stol(kv["ran"]);
  const long refused = std::stol(kv["denied"]) + std::stol(kv["protocol_error"]);
  EXPECT_EQ(ran + refused, 200);
  EXPECT_GE(ran, 1) << r.out;
  EXPECT_GE(refused, 1) << "nothing was rate limited: " << r.out;
  long limited = 0;
  for (const auto& [reason, n] : RawReasons(r.out)) {
    const std::string l = Lower(reason);
    if (absl::StrContains(l, "rate") || absl::StrContains(l, "pending")) limited += n;
  }
  EXPECT_EQ(limited, refused) << "refusals other than the limits: " << r.out;
  // A rate-limited request gets no audit line of its own (a flood must not
  // fill the host's disk); every other one gets exactly one.
  long rate_limited = 0;
  for (const auto& [reason, n] : RawReasons(r.out)) {
    if (absl::StrContains(Lower(reason), "rate limited")) rate_limited += n;
  }
  EXPECT_GE(rate_limited, 1) << r.out;
  ASSERT_AUDIT(audit_after, a->id());
  EXPECT_EQ(static_cast<long>(audit_after.size() - audit_before.size()), 200 - rate_limited)
      << r.out;
  // The bucket refills (10/s, burst 20) and the broker still answers.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  CommandResult after = Escalate(*a, {"--", "uname", "-s"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, "Linux\n");
}

TEST_F(EscE2eTest, OutputIsCutAtOneMebibyteAndFlagged) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  auto approver = ScriptedApprover::Start(
      {"--session=" + a->id(), "--argv0=head", "--approve", "--count=1", "--timeout=60"});
  CommandResult r = a->Shell(std::string(kClient) +
                             " -- head -c 3000000 /dev/zero 2>/tmp/esc-trunc.err | wc -c;"
                             " cat /tmp/esc-trunc.err >&2");
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  EXPECT_EQ(Trim(r.out), "1048576") << r.err;
  EXPECT_THAT(Lower(r.err), HasSubstr("truncated"));
  ASSERT_AUDIT(records, a->id());
  std::vector<AuditRecord> h = WithArgv(records, {"head", "-c", "3000000", "/dev/zero"});
  ASSERT_FALSE(h.empty());
  EXPECT_TRUE(h.back().stdout_truncated());
  EXPECT_FALSE(h.back().stderr_truncated());
  EXPECT_EQ(h.back().exit_code(), 0);
}

bool HostSleep30Left() {
  for (const auto& argv : ProcessesWith("sleep")) {
    if (argv.size() == 2 && argv[1] == "30" &&
        (argv[0] == "sleep" || absl::EndsWith(argv[0], "/sleep"))) {
      return true;
    }
  }
  return false;
}

TEST_F(EscE2eTest, CommandPastTheHostTimeoutIsStopped) {
  net::NetSession* a = S(Slot::kA);
  ASSERT_NE(a, nullptr) << Why(Slot::kA);
  ASSERT_FALSE(HostSleep30Left()) << "a `sleep 30` runs on the host before the test";
  auto approver = ScriptedApprover::Start(
      {"--session=" + a->id(), "--argv0=sleep", "--approve", "--count=1", "--timeout=60"});
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r = Escalate(*a, {"--", "sleep", "30"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(approver->Wait(30), 0) << approver->Log();
  EXPECT_EQ(r.exit_code, 124) << r.err;
  EXPECT_GE(took, kCommandTimeout);
  EXPECT_LT(took, kCommandTimeout + 5) << "SIGTERM, 2 s grace, SIGKILL";
  EXPECT_FALSE(HostSleep30Left()) << "the command's process is left on the host";
  ASSERT_AUDIT(records, a->id());
  std::vector<AuditRecord> s = WithArgv(records, {"sleep", "30"});
  ASSERT_FALSE(s.empty());
  EXPECT_TRUE(s.back().timed_out());
  EXPECT_TRUE(s.back().ran());
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
