// `lazaret net` and the session's attach/detach against a fake
// NetPolicyService served over a real Unix socket in this process: what
// the commands send, what they print, and their exit codes.
#include "clients/lazaret/net/command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "clients/lazaret/net/args.h"
#include "clients/lazaret/net/fake_netpolicy_service.h"
#include "clients/lazaret/net/format.h"
#include "clients/lazaret/net/netpolicy_client.h"
#include "google/protobuf/util/json_util.h"
#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::net {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rpb = ::lazaret::netrouter::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kId[] = "0123456789ab";
constexpr int64_t kCommandNow = 1700000000;

class NetCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-net-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto listener = UnixListener::Bind(NetPolicySocket(dir_));
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server = GrpcUnixServer::Start(std::move(*listener), {&fake_}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    fake_.applied.mutable_session()->set_id(kId);
    fake_.applied.set_generation(8);
    fake_.applied.set_routes(25);
    fake_.applied.set_digest("ab12cd");
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    (void)!system(("rm -rf " + dir_).c_str());
  }

  // Parses `argv` as `lazaret net` does and runs it for kId.
  int Net(const std::vector<std::string>& argv) {
    out_.clear();
    err_.clear();
    absl::StatusOr<NetArgs> args = ParseNetArgs(argv);
    EXPECT_TRUE(args.ok()) << args.status();
    if (!args.ok()) return -1;
    NetPolicyClient client(NetPolicySocket(dir_));
    NetOutput o{.out = [this](absl::string_view s) { out_.append(s.data(), s.size()); },
                .err = [this](absl::string_view s) { err_.append(s.data(), s.size()); },
                .now_unix = [] { return kCommandNow; },
                .watch_requests =
                    [this](const std::string& session, bool follow, const auto& each) {
                      requests_session_ = session;
                      requests_follow_ = follow;
                      for (const auto& r : requests_) {
                        if (!each(r)) break;
                      }
                      return requests_status_;
                    }};
    return RunNetCommand(*args, kId, client, o);
  }

  std::string dir_;
  FakeNetPolicyService fake_;
  std::unique_ptr<GrpcUnixServer> server_;
  std::vector<::lazaret::egress::v1::RequestRecord> requests_;
  absl::Status requests_status_;
  std::string requests_session_;
  bool requests_follow_ = false;
  std::string out_;
  std::string err_;
};

TEST_F(NetCommandTest, ShowPrintsThePolicyAndJsonIsTheMessage) {
  fake_.policy.mutable_session()->set_id(kId);
  fake_.policy.set_profile("dev");
  fake_.policy.set_generation(8);
  pb::Rule* r = fake_.policy.add_rules();
  r->mutable_destination()->set_prefix("10.0.0.0/8");
  r->set_action(pb::RULE_ACTION_DENY);
  r->mutable_source()->set_kind(pb::RULE_KIND_CONFIG);
  r->mutable_source()->set_layer(::lazaret::common::v1::CONFIG_LAYER_EMBEDDED_DEFAULT);
  r->mutable_source()->set_key_path("network.default_deny");
  rpb::Route* route = fake_.policy.add_installed();
  route->mutable_destination()->set_prefix("10.0.0.0/8");
  route->set_action(rpb::ROUTE_ACTION_PROHIBIT);
  fake_.policy.set_digest(*RoutesDigest(fake_.policy.installed()));
  fake_.policy.set_router_reachable(true);

  EXPECT_EQ(Net({"show", kId}), kExitOk) << err_;
  EXPECT_THAT(fake_.calls, ElementsAre(std::string("ShowPolicy ") + kId));
  EXPECT_THAT(out_, HasSubstr("profile     dev\n"));
  EXPECT_THAT(out_, HasSubstr("  deny    10.0.0.0/8   default network.default_deny\n"));
  EXPECT_THAT(out_, HasSubstr("installed   1 routes, matching the applied digest"));
  EXPECT_EQ(err_, "");

  EXPECT_EQ(Net({"show", kId, "--json"}), kExitOk) << err_;
  pb::SessionPolicy back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_, &back).ok()) << out_;
  EXPECT_EQ(back.SerializeAsString(), fake_.policy.SerializeAsString());
}

TEST_F(NetCommandTest, TestSendsTheDestinationAndExitsByTheVerdict) {
  pb::AddressVerdict* a = fake_.verdict.add_addresses();
  a->set_address("2001:db8::10");
  a->set_allowed(true);
  fake_.verdict.set_allowed(true);
  EXPECT_EQ(Net({"test", kId, "[2001:db8::10]:53", "--udp"}), kExitOk) << err_;
  EXPECT_EQ(fake_.test.session().id(), kId);
  EXPECT_EQ(fake_.test.host(), "2001:db8::10");
  EXPECT_EQ(fake_.test.port(), 53u);
  EXPECT_EQ(fake_.test.protocol(), rpb::PROTOCOL_UDP);
  EXPECT_THAT(out_, HasSubstr("[2001:db8::10]:53/udp: allowed\n"));

  fake_.verdict.set_allowed(false);
  fake_.verdict.mutable_addresses(0)->set_allowed(false);
  EXPECT_EQ(Net({"test", kId, "Api.Example.com:443"}), kExitFailed) << err_;
  EXPECT_EQ(fake_.test.host(), "api.example.com");
  EXPECT_EQ(fake_.test.protocol(), rpb::PROTOCOL_TCP);
  EXPECT_THAT(out_, HasSubstr("api.example.com:443/tcp: denied\n"));

  fake_.status = grpc::Status(grpc::StatusCode::NOT_FOUND, "no session 0123456789ab");
  EXPECT_EQ(Net({"test", kId, "10.0.0.1:80"}), kExitUsage);
  EXPECT_EQ(out_, "");
  EXPECT_THAT(err_, HasSubstr("lazaret net test: lazaret-netpolicyd refused TestDestination: no "
                              "session 0123456789ab"));
}

TEST_F(NetCommandTest, LogSaysWhatItCannotSeeThenOneLinePerEntry) {
  pb::LogEntry e;
  e.set_time_unix_ms(1700000000123);
  e.set_kind(pb::LOG_KIND_NAME_REFUSED);
  e.set_name("x\x1b[31m.example");
  e.set_query_type("A");
  fake_.log = {e, e};
  EXPECT_EQ(Net({"log", kId, "--follow"}), kExitOk) << err_;
  EXPECT_TRUE(fake_.watch.follow());
  EXPECT_EQ(fake_.watch.session().id(), kId);
  EXPECT_EQ(err_, kEgressLogNotice);
  EXPECT_THAT(err_, HasSubstr("without connect() are not in this log"));
  const std::string line = "2023-11-14T22:13:20.123Z  name-refused     x\\x1b[31m.example  A  -\n";
  EXPECT_EQ(out_, line + line);

  EXPECT_EQ(Net({"log", kId}), kExitOk);
  EXPECT_FALSE(fake_.watch.follow());
}

TEST_F(NetCommandTest, LogJsonPrintsOneMappingPerLine) {
  pb::LogEntry e;
  e.set_kind(pb::LOG_KIND_CONNECT_REFUSED);
  e.set_destination("10.203.0.2");
  e.set_port(80);
  e.set_process("perl");
  fake_.log = {e, e};
  EXPECT_EQ(Net({"log", kId, "--json"}), kExitOk) << err_;
  std::vector<std::string> lines = absl::StrSplit(out_, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u);
  pb::LogEntry back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(lines[1], &back).ok()) << lines[1];
  EXPECT_EQ(back.destination(), "10.203.0.2");
  EXPECT_EQ(back.process(), "perl");
  EXPECT_EQ(back.kind(), pb::LOG_KIND_CONNECT_REFUSED);
}

TEST_F(NetCommandTest, LogRequestsPrintsTheProxysRecordsAsLinesOrJson) {
  ::lazaret::egress::v1::RequestRecord r;
  r.set_method("POST");
  r.set_host("api.anthropic.com");
  r.set_path("/v1/messages");
  r.set_status(200);
  r.add_secrets("anthropic");
  requests_.push_back(r);
  r.set_path("/v1/admin");
  r.set_status(403);
  r.set_refused("no rule admits it");
  requests_.push_back(r);
  EXPECT_EQ(Net({"log", kId, "--requests", "--follow"}), 0);
  EXPECT_EQ(requests_session_, kId);
  EXPECT_TRUE(requests_follow_);
  EXPECT_THAT(out_, HasSubstr("POST api.anthropic.com/v1/messages  200"));
  EXPECT_THAT(out_, HasSubstr("REFUSED: no rule admits it"));
  EXPECT_EQ(err_, "");  // the egress log's notice is not the request log's
  EXPECT_EQ(Net({"log", kId, "--requests", "--json"}), 0);
  EXPECT_THAT(out_, HasSubstr("\"path\":\"/v1/admin\""));
  requests_status_ = absl::NotFoundError("session has no egress proxy");
  EXPECT_NE(Net({"log", kId, "--requests"}), 0);
  EXPECT_THAT(err_, HasSubstr("no egress proxy"));
}

TEST_F(NetCommandTest, ReloadAllowAndDenyPrintTheNewGeneration) {
  EXPECT_EQ(Net({"reload", kId}), kExitOk) << err_;
  EXPECT_EQ(out_,
            "session 0123456789ab: configuration resolved again and applied, generation 8 (25 "
            "routes, digest ab12cd)\n");

  EXPECT_EQ(Net({"allow", kId, "10.9.0.0/16", "--for", "10m"}), kExitOk) << err_;
  EXPECT_EQ(fake_.change.session().id(), kId);
  EXPECT_EQ(fake_.change.action(), pb::RULE_ACTION_ALLOW);
  EXPECT_EQ(fake_.change.cidr().prefix(), "10.9.0.0/16");
  EXPECT_EQ(fake_.change.duration_seconds(), 600u);
  EXPECT_EQ(out_,
            "session 0123456789ab: allowed 10.9.0.0/16 for 10 min, generation 8 (25 routes, "
            "digest ab12cd)\n");

  EXPECT_EQ(Net({"deny", kId, "*.Tracker.example"}), kExitOk) << err_;
  EXPECT_EQ(fake_.change.action(), pb::RULE_ACTION_DENY);
  EXPECT_EQ(fake_.change.name(), "*.tracker.example");
  EXPECT_FALSE(fake_.change.has_cidr());
  EXPECT_EQ(fake_.change.duration_seconds(), 0u);
  EXPECT_THAT(out_, HasSubstr("denied *.tracker.example for the rest of the session"));

  fake_.status = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "the session has ended");
  EXPECT_EQ(Net({"reload", kId}), kExitFailed);
  EXPECT_THAT(err_, HasSubstr("lazaret net reload: lazaret-netpolicyd refused ReloadSession: the "
                              "session has ended"));
}

TEST_F(NetCommandTest, AttachReturnsTheAppliedGenerationAndDetachIsBestEffort) {
  NetPolicyClient client(NetPolicySocket(dir_));
  absl::StatusOr<pb::PolicyApplied> a = client.Attach(kId);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->generation(), 8u);
  EXPECT_TRUE(DetachSessionBestEffort(dir_, kId).ok());
  EXPECT_THAT(fake_.calls, ElementsAre(std::string("AttachSession ") + kId,
                                       std::string("DetachSession ") + kId));

  fake_.status = grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "");
  a = client.Attach(kId);
  EXPECT_TRUE(absl::IsUnimplemented(a.status()));
  EXPECT_THAT(a.status().message(), HasSubstr("does not implement AttachSession"));
  EXPECT_TRUE(DetachSessionBestEffort(dir_, kId).ok());

  fake_.status = grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown session");
  EXPECT_TRUE(DetachSessionBestEffort(dir_, kId).ok());
  fake_.status = grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not yours");
  absl::Status d = DetachSessionBestEffort(dir_, kId);
  EXPECT_TRUE(absl::IsPermissionDenied(d));
  EXPECT_THAT(d.message(), HasSubstr("not yours"));
}

TEST_F(NetCommandTest, NoServiceMeansStartLazaretAndDetachDoesNotMind) {
  server_->Shutdown();
  server_.reset();
  NetPolicyClient client(NetPolicySocket(dir_));
  absl::StatusOr<pb::PolicyApplied> a = client.Attach(kId, std::chrono::seconds(2));
  EXPECT_TRUE(absl::IsUnavailable(a.status())) << a.status();
  EXPECT_THAT(a.status().message(), HasSubstr(NetPolicySocket(dir_)));
  EXPECT_THAT(a.status().message(), HasSubstr("lazaret up"));
  EXPECT_TRUE(DetachSessionBestEffort(dir_, kId).ok());
  EXPECT_EQ(Net({"show", kId}), kExitFailed);
  EXPECT_THAT(err_, HasSubstr("lazaret net show: lazaret-netpolicyd does not answer on"));
}

}  // namespace
}  // namespace lazaret::cli::net
