// lazaret-netpolicyd (in this process: registry, service, resolver) against
// the real lazaret-netrouter in a fresh network namespace (RouterSession):
// what the sandbox meets. Needs root (namespaces) and skips otherwise;
// LAZARET_TEST_NETROUTER names another router binary.
#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/router_session.h"

namespace lazaret::test {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace cfg = ::lazaret::config::v1;
namespace dns = ::lazaret::netpolicyd::dns;

constexpr char kRemote[] = "203.0.113.5";
constexpr char kRemote2[] = "203.0.113.6";

class NetpolicydRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: it creates network namespaces";
    cfg::NetworkPolicy network;
    network.add_deny()->mutable_cidr()->set_prefix("10.0.0.0/8");
    network.add_allow_domains()->set_pattern("*.example.test");
    std::vector<TestDnsRecord> records;
    for (const char* r : {"api.example.test=A:203.0.113.5@30", "rebind.example.test=A:10.1.2.3",
                          "other.test=A:203.0.113.6"}) {
      records.push_back(*ParseTestDnsRecord(r));
    }
    auto session = RouterSession::Start(RouterSession::RouterBinary(), network, records);
    ASSERT_TRUE(session.ok()) << session.status();
    s_ = *std::move(session);
  }

  pb::PolicyApplied Attach() {
    auto applied = s_->Attach();
    EXPECT_TRUE(applied.ok()) << applied.status();
    return applied.ok() ? *applied : pb::PolicyApplied();
  }
  grpc::Status Change(pb::RuleAction action, const std::string& cidr) {
    grpc::ClientContext ctx;
    pb::ChangeSessionRequest req;
    req.mutable_session()->set_id(kRouterSessionId);
    req.set_action(action);
    req.mutable_cidr()->set_prefix(cidr);
    pb::PolicyApplied applied;
    return s_->stub().ChangeSession(&ctx, req, &applied);
  }

  std::unique_ptr<RouterSession> s_;
};

TEST_F(NetpolicydRouterTest, AttachAppliesTheTableTheRouterReadsBack) {
  pb::PolicyApplied applied = Attach();
  EXPECT_GE(applied.generation(), 1u);
  grpc::ClientContext ctx;
  pb::ShowPolicyRequest req;
  req.mutable_session()->set_id(kRouterSessionId);
  pb::SessionPolicy policy;
  ASSERT_TRUE(s_->stub().ShowPolicy(&ctx, req, &policy).ok());
  EXPECT_TRUE(policy.router_reachable());
  EXPECT_EQ(static_cast<uint32_t>(policy.installed_size()), applied.routes());
  EXPECT_EQ(policy.digest(), applied.digest());
  // Default deny: the remote host is refused at once, the gateway too.
  EXPECT_EQ(s_->Connect(kRemote), EACCES);
  EXPECT_EQ(s_->Connect("198.51.100.1"), EACCES);
}

TEST_F(NetpolicydRouterTest, ListedNameResolvesThroughTheRouterAndConnects) {
  Attach();
  ASSERT_EQ(s_->Connect(kRemote), EACCES);
  std::optional<dns::Response> resp = s_->Ask("api.example.test", dns::kTypeA);
  ASSERT_TRUE(resp.has_value()) << "no answer from the router's 127.0.0.1:53";
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
  ASSERT_EQ(resp->answers.size(), 1u);
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, resp->answers[0].address.data(), text, sizeof(text));
  EXPECT_STREQ(text, kRemote);
  // The route was installed before the answer: the next connect works.
  EXPECT_EQ(s_->Connect(kRemote), 0);
  EXPECT_EQ(s_->upstream().QueryCount("api.example.test"), 1);
}

TEST_F(NetpolicydRouterTest, UnlistedNameIsRefusedAndTheUpstreamSeesNothing) {
  Attach();
  std::optional<dns::Response> resp = s_->Ask("other.test", dns::kTypeA);
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(s_->upstream().QueryCount("other.test"), 0);
  EXPECT_EQ(s_->upstream().TotalQueries(), 0);
  EXPECT_EQ(s_->Connect(kRemote2), EACCES);
}

TEST_F(NetpolicydRouterTest, ListedNameAnsweringAPrivateAddressIsRefused) {
  Attach();
  std::optional<dns::Response> resp = s_->Ask("rebind.example.test", dns::kTypeA);
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(s_->upstream().QueryCount("rebind.example.test"), 1);
}

TEST_F(NetpolicydRouterTest, LiveAllowAndDenyApplyToTheNextConnect) {
  Attach();
  EXPECT_EQ(s_->Connect(kRemote2), EACCES);
  ASSERT_TRUE(Change(pb::RULE_ACTION_ALLOW, "203.0.113.6/32").ok());
  EXPECT_EQ(s_->Connect(kRemote2), 0);
  ASSERT_TRUE(Change(pb::RULE_ACTION_DENY, "203.0.113.0/24").ok());
  EXPECT_EQ(s_->Connect(kRemote2), 0);  // the longer allow still wins
  ASSERT_TRUE(Change(pb::RULE_ACTION_DENY, "203.0.113.6/32").ok());
  EXPECT_EQ(s_->Connect(kRemote2), EACCES);
}

TEST_F(NetpolicydRouterTest, TestDestinationAgreesWithTheKernel) {
  Attach();
  ASSERT_TRUE(Change(pb::RULE_ACTION_ALLOW, "203.0.113.6/32").ok());
  for (const auto& [host, allowed] :
       std::vector<std::pair<std::string, bool>>{{kRemote, false}, {kRemote2, true}}) {
    grpc::ClientContext ctx;
    pb::TestDestinationRequest req;
    req.mutable_session()->set_id(kRouterSessionId);
    req.set_host(host);
    req.set_port(kRemotePort);
    pb::TestDestinationResponse resp;
    ASSERT_TRUE(s_->stub().TestDestination(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.allowed(), allowed) << host;
    ASSERT_EQ(resp.addresses_size(), 1);
    EXPECT_EQ(resp.addresses(0).kernel().allowed(), allowed)
        << host << " " << resp.addresses(0).kernel().route_type();
  }
}

}  // namespace
}  // namespace lazaret::test
