// `lazaret audit` against a fake ApproverService served over a real Unix
// socket in this process, and against an audit log file when no broker
// answers: what it asks for, what it prints, and its exit codes.
#include "clients/lazaret/escalation/audit_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "clients/lazaret/escalation/broker_client.h"
#include "clients/lazaret/escalation/fake_broker_service.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::escalation {
namespace {

namespace apb = ::lazaret::approver::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kAuditId[] = "0123456789ab";

apb::AuditRecord Record(const std::string& request, apb::AuditRecord::Decision d) {
  apb::AuditRecord r;
  r.set_time("2026-12-01T17:00:00Z");
  r.set_session_id(kAuditId);
  r.set_request_id(request);
  r.set_decision(d);
  r.add_argv("id");
  r.set_ran(d == apb::AuditRecord::DECISION_AUTO_APPROVED);
  if (r.ran()) *r.mutable_ran_argv() = r.argv();
  r.set_auto_approve_entry(r.ran() ? "id" : "");
  r.set_reason(r.ran() ? "" : "no");
  r.set_duration_ms(5);
  return r;
}

class AuditCommandTest : public ::testing::Test {
 protected:
  void StartBroker() {
    auto listener = UnixListener::Bind(BrokerSocket(tmp_.path()));
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server = GrpcUnixServer::Start(std::move(*listener), {&endpoints_, &approver_},
                                        {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  int Audit(const std::vector<std::string>& argv) {
    out_.clear();
    err_.clear();
    absl::StatusOr<AuditArgs> args = ParseAuditArgs(argv);
    EXPECT_TRUE(args.ok()) << args.status();
    if (!args.ok()) return -1;
    BrokerClient client(BrokerSocket(tmp_.path()));
    AuditOutput o{.out = [this](absl::string_view s) { out_.append(s.data(), s.size()); },
                  .err = [this](absl::string_view s) { err_.append(s.data(), s.size()); }};
    return RunAudit(*args, client, log_, o);
  }

  test::TempDir tmp_{"laz-audc"};
  std::string log_ = tmp_.path() + "/audit.jsonl";
  FakeEndpointService endpoints_;
  FakeApproverService approver_;
  std::unique_ptr<GrpcUnixServer> server_;
  std::string out_, err_;
};

TEST_F(AuditCommandTest, ReadsThroughTheBrokerWithTheSessionAndLastAsked) {
  StartBroker();
  approver_.records = {Record("r1", apb::AuditRecord::DECISION_AUTO_APPROVED),
                       Record("r2", apb::AuditRecord::DECISION_DENIED)};
  // A file exists too: it must not be read while the broker answers.
  std::ofstream(log_) << "{\"request_id\":\"from-file\"}\n";
  EXPECT_EQ(Audit({"--session", kAuditId, "--last=2"}), kAuditExitOk);
  EXPECT_EQ(out_,
            "2026-12-01T17:00:00Z  0123456789ab  auto:id  id  exit 0  5 ms\n"
            "2026-12-01T17:00:00Z  0123456789ab  denied: no  id  not run  5 ms\n");
  EXPECT_THAT(err_, IsEmpty());
  ASSERT_EQ(approver_.requests.size(), 1u);
  EXPECT_EQ(approver_.requests[0].session_id(), kAuditId);
  EXPECT_EQ(approver_.requests[0].last(), 2u);
}

TEST_F(AuditCommandTest, JsonFromTheBrokerIsOneAuditRecordLinePerRecord) {
  StartBroker();
  approver_.records = {Record("r1", apb::AuditRecord::DECISION_AUTO_APPROVED)};
  EXPECT_EQ(Audit({"--json"}), kAuditExitOk);
  EXPECT_THAT(out_, HasSubstr("\"request_id\":\"r1\""));
  EXPECT_THAT(out_, HasSubstr("\"decision\":\"DECISION_AUTO_APPROVED\""));
  EXPECT_EQ(out_.find('\n'), out_.size() - 1);
  EXPECT_TRUE(approver_.requests[0].session_id().empty());
  EXPECT_EQ(approver_.requests[0].last(), 0u);
}

TEST_F(AuditCommandTest, ARefusalOfTheBrokerIsAnErrorNotAFallBack) {
  StartBroker();
  approver_.status = grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not the owner");
  std::ofstream(log_) << "{\"request_id\":\"from-file\"}\n";
  EXPECT_EQ(Audit({}), kAuditExitFailed);
  EXPECT_THAT(err_, HasSubstr("lazaret-brokerd refused ReadAudit: not the owner"));
  EXPECT_THAT(out_, IsEmpty());
}

TEST_F(AuditCommandTest, WithoutABrokerTheFileIsReadAndFiltered) {
  std::ofstream f(log_);
  f << "{\"session_id\":\"0123456789ab\",\"request_id\":\"r1\",\"decision\":"
       "\"DECISION_EXPIRED\",\"argv\":[\"make\",\"deploy\"]}\n"
    << "{\"session_id\":\"ba9876543210\",\"request_id\":\"r2\"}\n"
    << "garbage\x1b[31m\n"
    << "{\"session_id\":\"0123456789ab\",\"request_id\":\"r3\",\"decision\":"
       "\"DECISION_REFUSED\",\"reason\":\"rate limited\",\"command\":\"a;b\"}\n";
  f.close();
  EXPECT_EQ(Audit({"--session", kAuditId}), kAuditExitOk);
  EXPECT_EQ(out_,
            "  0123456789ab  expired  make deploy  not run  0 ms\n"
            "  0123456789ab  refused: rate limited  a;b  not run  0 ms\n");
  EXPECT_THAT(err_, HasSubstr("lazaret-brokerd is not running; reading " + log_));
  EXPECT_THAT(err_, HasSubstr("skipped " + log_ + ":3: not an audit record"));
  EXPECT_THAT(err_, ::testing::Not(HasSubstr("\x1b")));
}

TEST_F(AuditCommandTest, WithoutABrokerJsonIsTheLinesAsWritten) {
  const std::string line = "{\"session_id\":\"0123456789ab\",  \"request_id\":\"r1\"}";
  std::ofstream(log_) << line << "\n";
  EXPECT_EQ(Audit({"--json", "--last", "1"}), kAuditExitOk);
  EXPECT_EQ(out_, line + "\n");
}

TEST_F(AuditCommandTest, WithoutABrokerOrALogThereIsNothingToShow) {
  EXPECT_EQ(Audit({}), kAuditExitOk);
  EXPECT_THAT(out_, IsEmpty());
  EXPECT_THAT(err_, HasSubstr("no audit log yet"));
}

TEST(ParseAuditArgsTest, FlagsInBothSpellingsAndEachOnce) {
  absl::StatusOr<AuditArgs> a = ParseAuditArgs({"--session=0123456789ab", "--last", "5", "--json"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->session, "0123456789ab");
  EXPECT_EQ(a->last, 5u);
  EXPECT_TRUE(a->json);
  EXPECT_TRUE(ParseAuditArgs({"--help"})->help);
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--session"},
           {"--session", "../x"},
           {"--session", "0123456789AB"},
           {"--last", "0"},
           {"--last", "-1"},
           {"--last", "+3"},
           {"--last", "ten"},
           {"--last=99999999999"},
           {"--json", "--json"},
           {"--last=1", "--last=2"},
           {"extra"},
       }) {
    EXPECT_FALSE(ParseAuditArgs(bad).ok()) << bad[0];
  }
}

}  // namespace
}  // namespace lazaret::cli::escalation
