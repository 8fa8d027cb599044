// The real `lazaret net` binary against a fake NetPolicyService served on
// the runtime directory's netpolicyd.sock by this test, with live sessions
// whose directories (and locks) this test holds: which session the
// commands pick, what they send, print and exit with.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "clients/lazaret/net/fake_netpolicy_service.h"
#include "clients/lazaret/net/netpolicy_client.h"
#include "services/sessiond/session/session_dir.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::net {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class NetCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-netcmd-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    rt_ = tmpl;
    auto listener = UnixListener::Bind(NetPolicySocket(rt_));
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server = GrpcUnixServer::Start(std::move(*listener), {&fake_}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    fake_.applied.set_generation(3);
    fake_.applied.set_routes(12);
    fake_.applied.set_digest("d1");
  }
  void TearDown() override {
    sessions_.clear();
    if (server_ != nullptr) server_->Shutdown();
    (void)!system(("rm -rf " + rt_).c_str());
  }

  // A session directory whose lock this process holds: a live session.
  void Live(const std::string& id) {
    session::SessionRecord r{id, "dev", "/ws/" + id, "/data/dev/git", getpid(), 1700000000, ""};
    auto dir = session::SessionDir::Create(rt_, r);
    ASSERT_TRUE(dir.ok()) << dir.status();
    sessions_.push_back(std::move(*dir));
  }

  test::CommandResult Net(std::vector<std::string> args) {
    args.insert(args.begin(), {test::Binary("lazaret"), "net"});
    return test::Run(args, {{"LAZARET_RUNTIME_DIR", rt_}});
  }

  std::string rt_;
  FakeNetPolicyService fake_;
  std::unique_ptr<GrpcUnixServer> server_;
  std::vector<std::unique_ptr<session::SessionDir>> sessions_;
};

TEST_F(NetCmdTest, ShowWithoutASessionTakesTheOnlyLiveOne) {
  test::CommandResult none = Net({"show"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("no live session (lazaret run starts one)"));
  EXPECT_THAT(fake_.calls, IsEmpty());

  Live("0123456789ab");
  fake_.policy.mutable_session()->set_id("0123456789ab");
  fake_.policy.set_profile("dev");
  fake_.policy.set_generation(3);
  test::CommandResult one = Net({"show"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(fake_.calls, ElementsAre("ShowPolicy 0123456789ab"));
  EXPECT_THAT(one.out, HasSubstr("session     0123456789ab\n"));
  EXPECT_THAT(one.out, HasSubstr("generation  3\n"));
  EXPECT_THAT(one.out, HasSubstr("installed   unknown: the session's router did not answer"));
}

TEST_F(NetCmdTest, SeveralLiveSessionsAreListedAndAPrefixPicksOne) {
  Live("0123456789ab");
  Live("0fedcba98765");
  test::CommandResult several = Net({"show", "--json"});
  EXPECT_EQ(several.exit_code, 1);
  EXPECT_THAT(several.err, HasSubstr("several sessions are live; name one"));
  EXPECT_THAT(several.err, HasSubstr("0123456789ab  profile dev  /ws/0123456789ab"));
  EXPECT_THAT(several.err, HasSubstr("0fedcba98765  profile dev  /ws/0fedcba98765"));
  EXPECT_THAT(Net({"reload", "0"}).err, HasSubstr("'0' matches several live sessions"));
  EXPECT_THAT(Net({"reload", "0a"}).err, HasSubstr("no live session '0a' (see: lazaret ps)"));
  EXPECT_THAT(fake_.calls, IsEmpty());

  test::CommandResult reload = Net({"reload", "0f"});
  EXPECT_EQ(reload.exit_code, 0) << reload.err;
  EXPECT_THAT(fake_.calls, ElementsAre("ReloadSession 0fedcba98765"));
  EXPECT_EQ(reload.out,
            "session 0fedcba98765: configuration resolved again and applied, generation 3 (12 "
            "routes, digest d1)\n");
}

TEST_F(NetCmdTest, TestExitsOneWhenDeniedAndTwoOnErrors) {
  Live("0123456789ab");
  pb::AddressVerdict* a = fake_.verdict.add_addresses();
  a->set_address("10.0.2.2");
  a->mutable_rule()->mutable_destination()->set_prefix("10.0.2.2/32");
  a->mutable_rule()->set_action(pb::RULE_ACTION_DENY);
  a->mutable_rule()->mutable_source()->set_kind(pb::RULE_KIND_GATEWAY);
  test::CommandResult denied = Net({"test", "01", "10.0.2.2:80"});
  EXPECT_EQ(denied.exit_code, 1) << denied.err;
  EXPECT_EQ(fake_.test.host(), "10.0.2.2");
  EXPECT_EQ(fake_.test.port(), 80u);
  EXPECT_THAT(denied.out, HasSubstr("10.0.2.2:80/tcp: denied\n"));
  EXPECT_THAT(denied.out, HasSubstr("denied  by deny 10.0.2.2/32 (sidecar gateway)"));

  EXPECT_EQ(Net({"test", "01", "10.0.2.2"}).exit_code, 2);     // no port
  EXPECT_EQ(Net({"test", "ff", "10.0.2.2:80"}).exit_code, 2);  // no such session
  fake_.status = grpc::Status(grpc::StatusCode::INTERNAL, "router gone");
  test::CommandResult failed = Net({"test", "01", "10.0.2.2:80"});
  EXPECT_EQ(failed.exit_code, 2);
  EXPECT_THAT(failed.err, HasSubstr("refused TestDestination: router gone"));
}

TEST_F(NetCmdTest, AllowForADurationAndLogWithItsNotice) {
  Live("0123456789ab");
  test::CommandResult allow = Net({"allow", "0123456789ab", "Mirror.Example.org", "--for", "2h"});
  EXPECT_EQ(allow.exit_code, 0) << allow.err;
  EXPECT_EQ(fake_.change.name(), "mirror.example.org");
  EXPECT_EQ(fake_.change.action(), pb::RULE_ACTION_ALLOW);
  EXPECT_EQ(fake_.change.duration_seconds(), 7200u);
  EXPECT_THAT(allow.out, HasSubstr("allowed mirror.example.org for 2 h, generation 3"));

  pb::LogEntry e;
  e.set_time_unix_ms(1700000000000);
  e.set_kind(pb::LOG_KIND_POLICY_APPLIED);
  e.set_detail("generation 3");
  fake_.log = {e};
  test::CommandResult log = Net({"log", "01"});
  EXPECT_EQ(log.exit_code, 0) << log.err;
  EXPECT_TRUE(absl::StartsWith(
      log.err, "lazaret: UDP datagrams sent without connect() are not in this log (DNS is)"))
      << log.err;
  EXPECT_EQ(log.out, "2023-11-14T22:13:20.000Z  policy-applied   -  -  -  generation 3\n");
}

}  // namespace
}  // namespace lazaret::cli::net
