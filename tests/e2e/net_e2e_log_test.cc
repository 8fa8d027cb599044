// The egress log end to end: every connect() the sandbox makes reaches
// `lazaret net log` through runsc's trace sink with the rule that decided
// it, DNS decisions are there too, the log outlives the session, --follow
// streams it and the approver API serves it.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "tests/e2e/net_e2e_fixture.h"

namespace lazaret::test::e2e::net {
namespace {

namespace pb = ::lazaret::netpolicy::v1;

// Connect entries carry the sandbox's process name (the kernel's comm).
constexpr char kProbeProcess[] = "net_probe";

std::vector<pb::LogEntry> ParseJsonLines(const std::string& text) {
  std::vector<pb::LogEntry> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    pb::LogEntry e;
    if (google::protobuf::util::JsonStringToMessage(line, &e).ok()) out.push_back(std::move(e));
  }
  return out;
}

const pb::LogEntry* FindConnect(const std::vector<pb::LogEntry>& entries, pb::LogKind kind,
                                const std::string& destination, uint32_t port) {
  for (const auto& e : entries) {
    if (e.kind() == kind && e.destination() == destination && e.port() == port) return &e;
  }
  return nullptr;
}

const pb::LogEntry* FindName(const std::vector<pb::LogEntry>& entries, pb::LogKind kind,
                             const std::string& name) {
  for (const auto& e : entries) {
    if (e.kind() == kind && e.name() == name) return &e;
  }
  return nullptr;
}

// `lazaret net log ID --json`, polled until `done` holds (the trace
// records arrive asynchronously) or 15 s pass.
std::vector<pb::LogEntry> LogUntil(
    const std::string& id, const std::function<bool(const std::vector<pb::LogEntry>&)>& done,
    std::string* err = nullptr) {
  std::vector<pb::LogEntry> entries;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  do {
    CommandResult r = LazaretNet({"log", id, "--json"});
    if (err != nullptr) *err = r.err;
    entries = ParseJsonLines(r.out);
    if (done(entries)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < deadline);
  return entries;
}

TEST_F(NetE2eTest, LogShowsAllowedAndRefusedConnectsWithTheirRule) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const uint32_t port = kTestPort;
  auto r = s->Probes({{"pub", {"connect", kPublicV4, kPort}},
                      {"pub-udp", {"connect", kPublicV6, kPort, "--udp"}},
                      {"deny", {"connect", kPrivate10, kPort}},
                      {"lan6", {"connect", kLan6, kPort}}});
  EXPECT_CONNECTS(r["pub"], kPublicV4);
  EXPECT_REFUSED_FAST(r["deny"], kPrivate10);
  EXPECT_REFUSED_FAST(r["lan6"], kLan6);
  std::string err;
  std::vector<pb::LogEntry> log = LogUntil(
      s->id(),
      [&](const std::vector<pb::LogEntry>& e) {
        return FindConnect(e, pb::LOG_KIND_CONNECT_ALLOWED, kPublicV4, port) &&
               FindConnect(e, pb::LOG_KIND_CONNECT_ALLOWED, kPublicV6, port) &&
               FindConnect(e, pb::LOG_KIND_CONNECT_REFUSED, kPrivate10, port) &&
               FindConnect(e, pb::LOG_KIND_CONNECT_REFUSED, kLan6, port);
      },
      &err);
  EXPECT_THAT(err, testing::HasSubstr("without connect() are not in this log"));
  const pb::LogEntry* pub = FindConnect(log, pb::LOG_KIND_CONNECT_ALLOWED, kPublicV4, port);
  ASSERT_NE(pub, nullptr) << log.size() << " entries";
  EXPECT_EQ(pub->process(), kProbeProcess);
  EXPECT_EQ(pub->rule().action(), pb::RULE_ACTION_ALLOW);
  EXPECT_EQ(pub->session_id(), s->id());
  EXPECT_GT(pub->seq(), 0u);
  // A connected UDP socket goes through connect() too.
  const pb::LogEntry* udp = FindConnect(log, pb::LOG_KIND_CONNECT_ALLOWED, kPublicV6, port);
  ASSERT_NE(udp, nullptr);
  EXPECT_EQ(udp->process(), kProbeProcess);
  const pb::LogEntry* deny = FindConnect(log, pb::LOG_KIND_CONNECT_REFUSED, kPrivate10, port);
  ASSERT_NE(deny, nullptr);
  EXPECT_EQ(deny->process(), kProbeProcess);
  EXPECT_EQ(deny->rule().action(), pb::RULE_ACTION_DENY);
  EXPECT_EQ(deny->rule().destination().prefix(), "10.0.0.0/8");
  EXPECT_THAT(deny->detail(), testing::HasSubstr("EACCES"));
  const pb::LogEntry* lan = FindConnect(log, pb::LOG_KIND_CONNECT_REFUSED, kLan6, port);
  ASSERT_NE(lan, nullptr);
  EXPECT_EQ(lan->rule().action(), pb::RULE_ACTION_DENY);
  EXPECT_EQ(lan->rule().source().kind(), pb::RULE_KIND_HOST_NETWORK) << lan->DebugString();
  // The text form names the rule and escapes what the sandbox chose.
  CommandResult text = LazaretNet({"log", s->id()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, testing::HasSubstr(absl::StrCat("connect-refused  net_probe  ", kPrivate10,
                                                        ":", port, "  deny 10.0.0.0/8")));
}

TEST_F(NetE2eTest, LogShowsRefusedAndAnsweredNames) {
  NetSession* s = Names();
  ASSERT_NE(s, nullptr) << NamesError();
  EXPECT_EQ(s->Probe({"dns", kNameSecret}).rcode, "REFUSED");
  EXPECT_EQ(s->Probe({"dns", kNameOk}).rcode, "NOERROR");
  std::vector<pb::LogEntry> log = LogUntil(s->id(), [](const std::vector<pb::LogEntry>& e) {
    return FindName(e, pb::LOG_KIND_NAME_REFUSED, kNameSecret) &&
           FindName(e, pb::LOG_KIND_NAME_ANSWERED, kNameOk);
  });
  EXPECT_NE(FindName(log, pb::LOG_KIND_NAME_REFUSED, kNameSecret), nullptr);
  const pb::LogEntry* ok = FindName(log, pb::LOG_KIND_NAME_ANSWERED, kNameOk);
  ASSERT_NE(ok, nullptr);
  EXPECT_THAT(ok->addresses(), testing::Contains(kPublicV4));
}

TEST_F(NetE2eTest, FollowStreamsNewEntriesAndTheApproverApiServesTheLog) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  UserDir dir("lz-netlog");
  const std::string out = dir.path() + "/follow.jsonl";
  const pid_t follower = SpawnLazaret("/", {"net", "log", s->id(), "--follow", "--json"}, {}, out);
  ASSERT_GT(follower, 0);
  // A port nobody listens on: the table allows it, the host refuses it.
  const uint32_t closed_port = 9;
  ProbeResult p = s->Probe({"connect", kPublicV4, "9"});
  EXPECT_FALSE(p.ok) << p.line;
  auto followed = [&] {
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    return FindConnect(ParseJsonLines(text.str()), pb::LOG_KIND_CONNECT_ALLOWED, kPublicV4,
                       closed_port) != nullptr;
  };
  EXPECT_TRUE(test::WaitFor(followed, std::chrono::seconds(15)));
  kill(follower, SIGTERM);
  WaitChild(follower, 10);
  // The approver API (brokerd, proxying netpolicyd) has the same entry.
  CommandResult api = RunAs("/", {test::Binary("lazaret_egress_log_client"),
                                  Env().runtime_dir + "/brokerd.sock", s->id()});
  ASSERT_EQ(api.exit_code, 0) << api.err;
  const std::vector<pb::LogEntry> served = ParseJsonLines(api.out);
  const pb::LogEntry* e = FindConnect(served, pb::LOG_KIND_CONNECT_ALLOWED, kPublicV4, closed_port);
  ASSERT_NE(e, nullptr) << api.out.substr(0, 2000);
  // The probe connects non-blocking: the outcome comes later.
  EXPECT_EQ(e->detail(), "connecting (non-blocking)");
  EXPECT_EQ(e->process(), kProbeProcess);
}

TEST_F(NetE2eTest, LogPersistsAfterTheSessionEnds) {
  absl::StatusOr<std::unique_ptr<NetSession>> started = W().StartSession(kPubProfile);
  ASSERT_TRUE(started.ok()) << started.status();
  NetSession& s = **started;
  const std::string id = s.id();
  EXPECT_REFUSED_FAST(s.Probe({"connect", kPrivate10, kPort}), kPrivate10);
  ASSERT_FALSE(LogUntil(id, [](const std::vector<pb::LogEntry>& e) {
                 return FindConnect(e, pb::LOG_KIND_CONNECT_REFUSED, kPrivate10, kTestPort);
               }).empty());
  s.End();
  // Detached: read back from the state directory's file.
  CommandResult r = LazaretNet({"log", id, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<pb::LogEntry> log = ParseJsonLines(r.out);
  const pb::LogEntry* e = FindConnect(log, pb::LOG_KIND_CONNECT_REFUSED, kPrivate10, kTestPort);
  ASSERT_NE(e, nullptr) << r.out.substr(0, 2000);
  EXPECT_EQ(e->session_id(), id);
  EXPECT_EQ(e->process(), kProbeProcess);
  // --follow of an ended session ends at the end of the file.
  CommandResult follow = LazaretNet({"log", id, "--follow"});
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
}

}  // namespace
}  // namespace lazaret::test::e2e::net
