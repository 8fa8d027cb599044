// NetPolicyService end to end in one process: the real service, registry,
// resolver and gRPC clients against fake supervisor, configd and router
// servers on Unix sockets and a real DNS server as the upstream.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "services/common/runtime_dir.h"
#include "services/netpolicyd/dns_message.h"
#include "services/netpolicyd/host_inputs.h"
#include "services/netpolicyd/netpolicyd.h"
#include "services/netpolicyd/test_fakes.h"
#include "tests/support/test_dns_server.h"
#include "tests/support/test_support.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace sv = ::lazaret::supervisor::v1;
namespace cfg = ::lazaret::config::v1;

constexpr char kServiceSessionId[] = "0123456789ab";

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_ = 1'000'000;
    router_ = std::make_unique<testing::FakeRouter>(router_generation_);
    sv::SessionInfo info;
    info.mutable_record()->set_id(kServiceSessionId);
    info.mutable_record()->set_profile("work");
    info.mutable_record()->set_workspace("/home/u/project");
    info.mutable_record()->set_explicit_config("/home/u/extra.toml");
    info.set_state(sv::SESSION_STATE_ATTACHED);
    supervisor_.Add(info);
    test::TestDnsServerOptions dns;
    for (const char* r :
         {"api.example.test=A:198.51.100.7@30", "api.example.test=AAAA:2001:db8::7",
          "www.example.test=CNAME:edge.cdn.test", "edge.cdn.test=A:198.51.100.8@600",
          "rebind.example.test=A:10.1.2.3", "mixed.example.test=A:10.1.2.4",
          "mixed.example.test=A:198.51.100.9", "other.test=A:198.51.100.10",
          "host.example.test=A:127.0.0.1", "private.test=A:10.9.9.9", "mixedask.test=A:10.1.2.5",
          "mixedask.test=A:198.51.100.11"}) {
      dns.records.push_back(*test::ParseTestDnsRecord(r));
    }
    auto upstream = test::TestDnsServer::Start(dns);
    ASSERT_TRUE(upstream.ok()) << upstream.status();
    upstream_ = *std::move(upstream);
    network_.add_dns_upstream(upstream_->address());
    Deny("10.0.0.0/8");
    AllowDomain("*.example.test");
  }
  void TearDown() override {
    if (registry_ != nullptr) registry_->Stop();
    service_server_.reset();
    registry_.reset();
    for (auto* s : {&router_server_, &supervisor_server_, &configd_server_}) s->reset();
  }

  void Deny(const std::string& cidr) {
    cfg::CidrEntry* e = network_.add_deny();
    e->mutable_cidr()->set_prefix(cidr);
    e->mutable_source()->set_key_path("network.default_deny");
  }
  void Allow(const std::string& cidr) { network_.add_allow()->mutable_cidr()->set_prefix(cidr); }
  // The egress proxy intercepts `host`: a secret's host, or an HTTP rule's.
  void InterceptForSecret(const std::string& host) {
    cfg::Secret* secret = profile_.add_secrets();
    secret->set_name(absl::StrCat("key", profile_.secrets_size()));
    secret->set_from_env("KEY");
    secret->add_hosts(host);
  }
  void InterceptForRule(const std::string& host) {
    cfg::HttpRule* rule = profile_.add_http_rules();
    rule->set_host(host);
    cfg::HttpAllow* allow = rule->add_allow();
    allow->set_method("GET");
    allow->set_path_prefix("/");
  }
  grpc::Status ResolveUpstream(const std::string& name, pb::ResolveUpstreamResponse* resp,
                               const std::string& session = kServiceSessionId) {
    grpc::ClientContext ctx;
    pb::ResolveUpstreamRequest req;
    req.mutable_session()->set_id(session);
    req.set_name(name);
    return stub_->ResolveUpstream(&ctx, req, resp);
  }
  // The detail of the last entry of `kind` for `name` ("" when none).
  std::string LoggedDetail(pb::LogKind kind, const std::string& name) {
    std::string detail;
    for (const auto& e : Log()) {
      if (e.kind() == kind && e.name() == name) detail = e.detail();
    }
    return detail;
  }
  void AllowDomain(const std::string& pattern) {
    cfg::DomainEntry* d = network_.add_allow_domains();
    d->set_pattern(pattern);
    d->mutable_source()->set_key_path("profiles.work.allow_domains");
  }

  // Starts the fakes and the service; `watch`: follow the fake supervisor.
  void Start(bool watch = false) {
    configd_.Set(network_);
    configd_.SetProfile(profile_);
    auto sup = testing::Serve(&supervisor_, SocketPath(dir_.path(), "supervisor"));
    auto conf = testing::Serve(&configd_, SocketPath(dir_.path(), "configd"));
    auto rtr = testing::Serve(router_.get(), RouterSocketPath(dir_.path(), kServiceSessionId));
    ASSERT_TRUE(sup.ok() && conf.ok() && rtr.ok());
    supervisor_server_ = *std::move(sup);
    configd_server_ = *std::move(conf);
    router_server_ = *std::move(rtr);
    RegistryOptions options;
    options.watch_supervisor = watch;
    options.tick = std::chrono::milliseconds(20);
    options.session.now_unix = [this] { return clock_.load(); };
    options.session.resolver.timeout = std::chrono::milliseconds(500);
    options.session.approval = approvals_;
    registry_ = std::make_shared<Registry>(dir_.path(), options);
    registry_->Start();
    impl_ = std::make_unique<NetPolicyServiceImpl>(registry_);
    auto server = testing::Serve(impl_.get(), SocketPath(dir_.path(), "netpolicyd"));
    ASSERT_TRUE(server.ok()) << server.status();
    service_server_ = *std::move(server);
    stub_ = pb::NetPolicyService::NewStub(DialUnix(SocketPath(dir_.path(), "netpolicyd")));
  }

  grpc::Status Attach(pb::PolicyApplied* applied) {
    grpc::ClientContext ctx;
    pb::AttachSessionRequest req;
    req.mutable_session()->set_id(kServiceSessionId);
    return stub_->AttachSession(&ctx, req, applied);
  }
  void AttachOk() {
    pb::PolicyApplied applied;
    grpc::Status st = Attach(&applied);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  grpc::Status Change(pb::RuleAction action, const std::string& cidr, const std::string& name,
                      uint64_t duration = 0) {
    grpc::ClientContext ctx;
    pb::ChangeSessionRequest req;
    req.mutable_session()->set_id(kServiceSessionId);
    req.set_action(action);
    if (!cidr.empty()) req.mutable_cidr()->set_prefix(cidr);
    if (!name.empty()) req.set_name(name);
    req.set_duration_seconds(duration);
    pb::PolicyApplied applied;
    return stub_->ChangeSession(&ctx, req, &applied);
  }

  // Asks `name` through the router's relay as the sandbox would.
  absl::StatusOr<dns::Response> Ask(const std::string& name, uint16_t type = dns::kTypeA,
                                    bool tcp = false) {
    std::vector<std::string> labels = absl::StrSplit(name, '.');
    dns::Question q{labels, type, dns::kClassIn};
    absl::StatusOr<std::string> answer = router_->Ask(dns::BuildQuery(0x5151, q), tcp);
    if (!answer.ok()) return answer.status();
    return dns::ParseResponse(*answer, 0x5151, q);
  }

  std::vector<pb::LogEntry> Log() {
    grpc::ClientContext ctx;
    pb::WatchLogRequest req;
    req.mutable_session()->set_id(kServiceSessionId);
    auto reader = stub_->WatchLog(&ctx, req);
    std::vector<pb::LogEntry> out;
    pb::LogEntry e;
    while (reader->Read(&e)) out.push_back(e);
    EXPECT_TRUE(reader->Finish().ok());
    return out;
  }
  bool Logged(pb::LogKind kind, const std::string& name) {
    for (const auto& e : Log()) {
      if (e.kind() == kind && e.name() == name) return true;
    }
    return false;
  }

  test::TempDir dir_{"lzp"};
  std::shared_ptr<ApprovalClient> approvals_;  // nullptr: brokerd.sock (absent)
  std::atomic<int64_t> clock_{0};
  uint64_t router_generation_ = 0;
  cfg::NetworkPolicy network_;
  cfg::ResolvedProfile profile_;  // secrets and HTTP rules; the network is network_
  testing::FakeSupervisor supervisor_;
  testing::FakeConfigd configd_;
  std::unique_ptr<testing::FakeRouter> router_;
  std::unique_ptr<test::TestDnsServer> upstream_;
  std::unique_ptr<GrpcUnixServer> supervisor_server_, configd_server_, router_server_,
      service_server_;
  std::shared_ptr<Registry> registry_;
  std::unique_ptr<NetPolicyServiceImpl> impl_;
  std::unique_ptr<pb::NetPolicyService::Stub> stub_;
};

TEST_F(ServiceTest, AttachAppliesTheCompiledPolicyAndResolvesFromTheRecord) {
  Start();
  pb::PolicyApplied applied;
  grpc::Status st = Attach(&applied);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(applied.session().id(), kServiceSessionId);
  EXPECT_EQ(applied.generation(), 1u);
  auto table = router_->Table();
  EXPECT_EQ(table["0.0.0.0/0"], "prohibit");
  EXPECT_EQ(table["::/0"], "prohibit");
  EXPECT_EQ(table["10.0.0.0/8"], "prohibit");
  EXPECT_EQ(table["10.0.2.2/32"], "prohibit");
  EXPECT_EQ(table["127.0.0.1/32"], "prohibit");  // a host interface address
  EXPECT_EQ(applied.routes(), table.size());
  cfg::ResolveProfileRequest asked = configd_.last_request();
  EXPECT_EQ(asked.profile(), "work");
  EXPECT_EQ(asked.selector().workspace_dir(), "/home/u/project");
  EXPECT_EQ(asked.selector().explicit_config(), "/home/u/extra.toml");
  EXPECT_TRUE(Logged(pb::LOG_KIND_POLICY_APPLIED, ""));
}

TEST_F(ServiceTest, GenerationContinuesFromTheRouters) {
  router_generation_ = 41;
  router_ = std::make_unique<testing::FakeRouter>(router_generation_);
  Start();
  pb::PolicyApplied applied;
  ASSERT_TRUE(Attach(&applied).ok());
  EXPECT_EQ(applied.generation(), 42u);
  ASSERT_TRUE(Attach(&applied).ok());  // a second attach re-applies
  EXPECT_EQ(applied.generation(), 43u);
}

TEST_F(ServiceTest, ListedNameIsAnsweredAndItsRouteInstalledFirst) {
  Start();
  AttachOk();
  uint64_t before = router_->generation();
  auto resp = Ask("API.example.test");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
  ASSERT_EQ(resp->answers.size(), 1u);
  EXPECT_EQ(resp->answers[0].ttl, 30u);  // the upstream's; the route lives 60 s
  // The route was in the router's table when the answer arrived.
  EXPECT_EQ(router_->Table()["198.51.100.7/32"], "allow");
  EXPECT_EQ(router_->generation(), before + 1);
  EXPECT_EQ(upstream_->QueryCount("api.example.test"), 1);
  EXPECT_TRUE(Logged(pb::LOG_KIND_NAME_ANSWERED, "API.example.test"));
  // Asked again within the route's life: no new generation.
  ASSERT_TRUE(Ask("api.example.test").ok());
  EXPECT_EQ(router_->generation(), before + 1);
}

TEST_F(ServiceTest, CnameChainIsAnsweredWithTheTargetsAddress) {
  Start();
  AttachOk();
  auto resp = Ask("www.example.test", dns::kTypeA, /*tcp=*/true);
  ASSERT_TRUE(resp.ok()) << resp.status();
  dns::Chain chain = dns::FollowChain(*resp, resp->question);
  ASSERT_EQ(chain.cnames.size(), 1u);
  ASSERT_EQ(chain.addresses.size(), 1u);
  EXPECT_EQ(chain.addresses[0].ttl, 600u);
  EXPECT_EQ(router_->Table()["198.51.100.8/32"], "allow");
}

TEST_F(ServiceTest, UnlistedNameIsRefusedAndNeverAskedUpstream) {
  Start();
  AttachOk();
  auto resp = Ask("other.test");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(upstream_->TotalQueries(), 0);
  EXPECT_TRUE(Logged(pb::LOG_KIND_NAME_REFUSED, "other.test"));
  EXPECT_EQ(router_->Table().count("198.51.100.10/32"), 0u);
}

TEST_F(ServiceTest, ListedNameAnsweringADeniedAddressIsRefused) {
  Start();
  AttachOk();
  auto resp = Ask("rebind.example.test");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(router_->Table().count("10.1.2.3/32"), 0u);
  EXPECT_TRUE(Logged(pb::LOG_KIND_ADDRESS_DROPPED, "rebind.example.test"));
  auto host = Ask("host.example.test");  // the host's own loopback
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(host->rcode, dns::Rcode::kRefused);
  // Only the denied address of a mixed answer is dropped.
  auto mixed = Ask("mixed.example.test");
  ASSERT_TRUE(mixed.ok());
  ASSERT_EQ(mixed->answers.size(), 1u);
  EXPECT_EQ(mixed->answers[0].address[3], 9);
}

TEST_F(ServiceTest, OtherTypesGetAnEmptyAnswerWithoutAskingUpstream) {
  Start();
  AttachOk();
  auto resp = Ask("api.example.test", /*MX*/ 15);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
  EXPECT_TRUE(resp->answers.empty());
  EXPECT_EQ(upstream_->TotalQueries(), 0);
}

TEST_F(ServiceTest, BrokenQueryGetsFormErr) {
  Start();
  AttachOk();
  auto answer = router_->Ask(std::string("\x12\x34\x01\x00\x00\x02", 6), false);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->size(), 12u);
  EXPECT_EQ((*answer)[3] & 0xf, 1);
  EXPECT_EQ(upstream_->TotalQueries(), 0);
}

TEST_F(ServiceTest, PublicInternetAllowedResolvesEveryNameAndStillPolicesAddresses) {
  Allow("0.0.0.0/0");
  Start();
  AttachOk();
  int applies = router_->applies();
  auto resp = Ask("other.test");
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
  EXPECT_EQ(resp->answers.size(), 1u);
  EXPECT_EQ(router_->applies(), applies);  // allowed already: no name route
  auto rebind = Ask("rebind.example.test");
  ASSERT_TRUE(rebind.ok());
  EXPECT_EQ(rebind->rcode, dns::Rcode::kRefused);
}

TEST_F(ServiceTest, InterceptedNameIsAnsweredWithTheProxyAddressWithoutAskingUpstream) {
  InterceptForSecret("api.example.test");
  InterceptForRule("*.cdn.example.test");
  Start();
  AttachOk();
  const auto table_before = router_->Table();
  for (const char* name : {"API.example.test", "a.cdn.example.test"}) {
    auto a = Ask(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->rcode, dns::Rcode::kNoError) << name;
    ASSERT_EQ(a->answers.size(), 1u) << name;
    EXPECT_EQ(a->answers[0].type, dns::kTypeA);
    EXPECT_EQ(a->answers[0].ttl, 60u);
    EXPECT_EQ(RecordAddress(a->answers[0]).Address(), "127.0.80.1");
    auto aaaa = Ask(name, dns::kTypeAaaa);
    ASSERT_TRUE(aaaa.ok()) << aaaa.status();
    EXPECT_EQ(aaaa->rcode, dns::Rcode::kNoError) << name;
    EXPECT_TRUE(aaaa->answers.empty()) << name;
    EXPECT_EQ(LoggedDetail(pb::LOG_KIND_NAME_ANSWERED, name), "intercepted by the egress proxy");
  }
  EXPECT_EQ(upstream_->TotalQueries(), 0);
  EXPECT_EQ(router_->Table(), table_before) << "no name route for an intercepted answer";
}

// The proxy took the session's secrets and rules at its start: a reload
// (an edited configuration) changes the policy but never which names go to
// the proxy, which would refuse or not know a name added later.
TEST_F(ServiceTest, AReloadKeepsTheInterceptedNamesOfTheStart) {
  InterceptForSecret("api.example.test");
  Start();
  AttachOk();
  profile_.clear_secrets();
  InterceptForSecret("mixed.example.test");
  configd_.SetProfile(profile_);
  ASSERT_TRUE(registry_->Reload(kServiceSessionId).ok());
  auto kept = Ask("api.example.test");
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->answers.size(), 1u);
  EXPECT_EQ(RecordAddress(kept->answers[0]).Address(), "127.0.80.1");
  auto added = Ask("mixed.example.test");
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_EQ(added->answers.size(), 1u);
  EXPECT_EQ(RecordAddress(added->answers[0]).Address(), "198.51.100.9");
}

TEST_F(ServiceTest, NameNotInterceptedIsAnsweredAsBefore) {
  InterceptForSecret("api.example.test");
  Start();
  AttachOk();
  auto resp = Ask("mixed.example.test");
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->answers.size(), 1u);
  EXPECT_EQ(RecordAddress(resp->answers[0]).Address(), "198.51.100.9");
  EXPECT_EQ(upstream_->QueryCount("mixed.example.test"), 1);
  EXPECT_EQ(LoggedDetail(pb::LOG_KIND_NAME_ANSWERED, "mixed.example.test"), "");
}

TEST_F(ServiceTest, InterceptedNameTheNamePolicyRefusesIsStillRefused) {
  InterceptForSecret("other.test");  // not listed
  InterceptForRule("api.example.test");
  Start();
  AttachOk();
  auto unlisted = Ask("other.test");
  ASSERT_TRUE(unlisted.ok()) << unlisted.status();
  EXPECT_EQ(unlisted->rcode, dns::Rcode::kRefused);
  ASSERT_TRUE(Change(pb::RULE_ACTION_DENY, "", "api.example.test").ok());
  auto denied = Ask("api.example.test");
  ASSERT_TRUE(denied.ok()) << denied.status();
  EXPECT_EQ(denied->rcode, dns::Rcode::kRefused);
  EXPECT_TRUE(Logged(pb::LOG_KIND_NAME_REFUSED, "api.example.test"));
  EXPECT_EQ(upstream_->TotalQueries(), 0);
  pb::ResolveUpstreamResponse resp;
  ASSERT_TRUE(ResolveUpstream("api.example.test", &resp).ok());
  EXPECT_TRUE(resp.addresses().empty());
  EXPECT_NE(resp.refused().find("denied by api.example.test"), std::string::npos) << resp.refused();
  ASSERT_TRUE(ResolveUpstream("other.test", &resp).ok());
  EXPECT_TRUE(resp.addresses().empty());
  EXPECT_NE(resp.refused().find("not listed"), std::string::npos) << resp.refused();
  EXPECT_EQ(upstream_->TotalQueries(), 0);
}

TEST_F(ServiceTest, ResolveUpstreamReturnsTheRealAddressesAndInstallsTheirRoutes) {
  InterceptForSecret("api.example.test");
  InterceptForRule("mixed.example.test");
  Start();
  AttachOk();
  EXPECT_EQ(router_->Table().count("198.51.100.7/32"), 0u);
  pb::ResolveUpstreamResponse resp;
  grpc::Status st = ResolveUpstream("API.example.test.", &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.refused(), "");
  ASSERT_EQ(resp.addresses_size(), 2);
  EXPECT_EQ(resp.addresses(0), "198.51.100.7");
  EXPECT_EQ(resp.addresses(1), "2001:db8::7");
  auto table = router_->Table();
  EXPECT_EQ(table["198.51.100.7/32"], "allow");
  EXPECT_EQ(table["2001:db8::7/128"], "allow");
  EXPECT_EQ(upstream_->QueryCount("api.example.test"), 2) << "A and AAAA";
  EXPECT_EQ(LoggedDetail(pb::LOG_KIND_NAME_ANSWERED, "api.example.test"), "for the egress proxy");
  // The address policy still filters: the denied address of a mixed answer
  // is dropped and gets no route.
  st = ResolveUpstream("mixed.example.test", &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.addresses_size(), 1);
  EXPECT_EQ(resp.addresses(0), "198.51.100.9");
  EXPECT_EQ(router_->Table().count("10.1.2.4/32"), 0u);
  EXPECT_TRUE(Logged(pb::LOG_KIND_ADDRESS_DROPPED, "mixed.example.test"));
}

TEST_F(ServiceTest, ResolveUpstreamRefusesANameThatIsNotIntercepted) {
  InterceptForSecret("api.example.test");
  Start();
  AttachOk();
  const auto table_before = router_->Table();
  pb::ResolveUpstreamResponse resp;
  grpc::Status st = ResolveUpstream("mixed.example.test", &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(resp.addresses().empty());
  EXPECT_NE(resp.refused().find("not intercepted"), std::string::npos) << resp.refused();
  EXPECT_EQ(upstream_->TotalQueries(), 0);
  EXPECT_EQ(router_->Table(), table_before);
  // A name that is no host name, and a session that is not attached.
  st = ResolveUpstream(std::string("api.example.test\0evil", 21), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  st = ResolveUpstream("a..b", &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  st = ResolveUpstream("api.example.test", &resp, "ba9876543210");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
}

TEST_F(ServiceTest, UpstreamFailureIsServfail) {
  network_.clear_dns_upstream();
  network_.add_dns_upstream("127.0.0.1:9");  // nothing listens
  Start();
  AttachOk();
  auto resp = Ask("api.example.test");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kServFail);
  EXPECT_TRUE(Logged(pb::LOG_KIND_NAME_FAILED, "api.example.test"));
}

TEST_F(ServiceTest, NameRoutesExpireAndTheTableFollows) {
  Start();
  AttachOk();
  ASSERT_TRUE(Ask("api.example.test").ok());
  EXPECT_EQ(router_->Table()["198.51.100.7/32"], "allow");
  clock_ += 59;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(router_->Table()["198.51.100.7/32"], "allow");
  clock_ += 2;  // past the 60 s floor
  EXPECT_TRUE(test::WaitFor([&] { return router_->Table().count("198.51.100.7/32") == 0; },
                            std::chrono::seconds(5)));
}

TEST_F(ServiceTest, LiveChangesApplyAndExpire) {
  Start();
  AttachOk();
  ASSERT_TRUE(Change(pb::RULE_ACTION_ALLOW, "10.9.0.0/16", "", 30).ok());
  EXPECT_EQ(router_->Table()["10.9.0.0/16"], "allow");
  ASSERT_TRUE(Change(pb::RULE_ACTION_DENY, "203.0.113.0/24", "").ok());
  EXPECT_EQ(router_->Table()["203.0.113.0/24"], "prohibit");
  clock_ += 31;
  EXPECT_TRUE(test::WaitFor([&] { return router_->Table().count("10.9.0.0/16") == 0; },
                            std::chrono::seconds(5)));
  EXPECT_EQ(router_->Table()["203.0.113.0/24"], "prohibit");
  EXPECT_EQ(Change(pb::RULE_ACTION_ALLOW, "10.1.2.3/8", "").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Change(pb::RULE_ACTION_UNSPECIFIED, "10.0.0.0/8", "").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServiceTest, LiveNameAllowAnswersAndLiveNameDenyDropsItsRoutes) {
  Start();
  AttachOk();
  ASSERT_TRUE(Change(pb::RULE_ACTION_ALLOW, "", "other.test").ok());
  auto resp = Ask("other.test");
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
  EXPECT_EQ(router_->Table()["198.51.100.10/32"], "allow");
  ASSERT_TRUE(Change(pb::RULE_ACTION_DENY, "", "other.test").ok());
  EXPECT_EQ(router_->Table().count("198.51.100.10/32"), 0u);
  EXPECT_EQ(Ask("other.test")->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(upstream_->QueryCount("other.test"), 1);
}

TEST_F(ServiceTest, TestDestinationJudgesAddressesNamesAndDnsPorts) {
  Start();
  AttachOk();
  auto test = [&](const std::string& host, uint32_t port) {
    grpc::ClientContext ctx;
    pb::TestDestinationRequest req;
    req.mutable_session()->set_id(kServiceSessionId);
    req.set_host(host);
    req.set_port(port);
    pb::TestDestinationResponse resp;
    EXPECT_TRUE(stub_->TestDestination(&ctx, req, &resp).ok());
    return resp;
  };
  pb::TestDestinationResponse denied = test("10.1.1.1", 443);
  EXPECT_FALSE(denied.allowed());
  EXPECT_EQ(denied.addresses(0).rule().destination().prefix(), "10.0.0.0/8");
  EXPECT_EQ(denied.addresses(0).kernel().route_type(), "fake");
  EXPECT_NE(denied.explanation().find("network.default_deny"), std::string::npos);
  pb::TestDestinationResponse gateway = test("10.0.2.2", 80);
  EXPECT_EQ(gateway.addresses(0).rule().source().kind(), pb::RULE_KIND_GATEWAY);
  pb::TestDestinationResponse name = test("api.example.test", 443);
  EXPECT_TRUE(name.allowed());
  EXPECT_TRUE(name.name_answered());
  EXPECT_EQ(name.name_rule().pattern(), "*.example.test");
  EXPECT_EQ(name.addresses_size(), 2);                       // A and AAAA
  EXPECT_EQ(router_->Table().count("198.51.100.7/32"), 0u);  // nothing installed
  pb::TestDestinationResponse dns_port = test("api.example.test", 53);
  EXPECT_FALSE(dns_port.allowed());
  pb::TestDestinationResponse unlisted = test("other.test", 443);
  EXPECT_FALSE(unlisted.allowed());
  EXPECT_FALSE(unlisted.name_answered());
  EXPECT_EQ(upstream_->QueryCount("other.test"), 0);
  pb::TestDestinationResponse rebind = test("rebind.example.test", 443);
  EXPECT_FALSE(rebind.allowed());
}

TEST_F(ServiceTest, ShowPolicyListsRulesNamesAndTheInstalledTable) {
  Allow("10.0.0.0/8");
  Start();
  AttachOk();
  grpc::ClientContext ctx;
  pb::ShowPolicyRequest req;
  req.mutable_session()->set_id(kServiceSessionId);
  pb::SessionPolicy policy;
  ASSERT_TRUE(stub_->ShowPolicy(&ctx, req, &policy).ok());
  EXPECT_EQ(policy.profile(), "work");
  EXPECT_TRUE(policy.router_reachable());
  EXPECT_EQ(static_cast<size_t>(policy.installed_size()), router_->Table().size());
  EXPECT_EQ(policy.names_size(), 1);
  EXPECT_FALSE(policy.names_unrestricted());
  EXPECT_EQ(policy.dns_upstream(0), upstream_->address());
  EXPECT_EQ(policy.generation(), router_->generation());
  // Shadowed rules are listed too: the equal-prefix allow under the deny.
  EXPECT_EQ(policy.rules_size(), policy.installed_size() + 4);
  int shown = 0;
  for (const auto& rule : policy.rules()) {
    if (rule.destination().prefix() != "10.0.0.0/8") continue;
    EXPECT_EQ(rule.action(), shown == 0 ? pb::RULE_ACTION_DENY : pb::RULE_ACTION_ALLOW);
    ++shown;
  }
  EXPECT_EQ(shown, 2);
}

TEST_F(ServiceTest, ListAndDetach) {
  Start();
  AttachOk();
  {
    grpc::ClientContext ctx;
    pb::ListSessionsResponse list;
    ASSERT_TRUE(stub_->ListSessions(&ctx, pb::ListSessionsRequest(), &list).ok());
    ASSERT_EQ(list.sessions_size(), 1);
    EXPECT_TRUE(list.sessions(0).router_reachable());
    EXPECT_EQ(list.sessions(0).profile(), "work");
  }
  grpc::ClientContext ctx;
  pb::DetachSessionRequest req;
  req.mutable_session()->set_id(kServiceSessionId);
  pb::DetachSessionResponse resp;
  ASSERT_TRUE(stub_->DetachSession(&ctx, req, &resp).ok());
  grpc::ClientContext show_ctx;
  pb::ShowPolicyRequest show;
  show.mutable_session()->set_id(kServiceSessionId);
  pb::SessionPolicy policy;
  EXPECT_EQ(stub_->ShowPolicy(&show_ctx, show, &policy).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, ApplyFailureFailsTheAttach) {
  router_->FailApplies(true);
  Start();
  pb::PolicyApplied applied;
  EXPECT_FALSE(Attach(&applied).ok());
  grpc::ClientContext ctx;
  pb::ListSessionsResponse list;
  ASSERT_TRUE(stub_->ListSessions(&ctx, pb::ListSessionsRequest(), &list).ok());
  EXPECT_EQ(list.sessions_size(), 0);
}

TEST_F(ServiceTest, RefusesIdsThatAreNotSessionIds) {
  Start();
  for (const char* bad : {"", "../../etc", "0123456789AB", "0123456789abc"}) {
    grpc::ClientContext ctx;
    pb::AttachSessionRequest req;
    req.mutable_session()->set_id(bad);
    pb::PolicyApplied applied;
    EXPECT_EQ(stub_->AttachSession(&ctx, req, &applied).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << bad;
  }
}

TEST_F(ServiceTest, SessionsAttachedBeforeAStartAreTakenUpAgain) {
  router_generation_ = 7;
  router_ = std::make_unique<testing::FakeRouter>(router_generation_);
  Start(/*watch=*/true);
  ASSERT_TRUE(test::WaitFor([&] { return router_->generation() == 8; }, std::chrono::seconds(10)));
  auto resp = Ask("api.example.test");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
}

// brokerd as the ask tests script it: each Ask is recorded and answered
// with the next outcome the test releases.
class ScriptedApprovals : public ApprovalClient {
 public:
  absl::StatusOr<netapproval::v1::AskResponse> Ask(const netapproval::v1::AskRequest& request,
                                                   std::chrono::system_clock::time_point,
                                                   AskCall&) override {
    std::unique_lock<std::mutex> lock(mu_);
    asked_.push_back(request);
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !outcomes_.empty(); });
    if (outcomes_.empty()) return absl::DeadlineExceededError("the test decided nothing");
    netapproval::v1::AskResponse r;
    r.set_outcome(outcomes_.front());
    outcomes_.pop_front();
    return r;
  }
  void Decide(netapproval::v1::AskResponse::Outcome outcome) {
    std::lock_guard<std::mutex> lock(mu_);
    outcomes_.push_back(outcome);
    cv_.notify_all();
  }
  std::optional<netapproval::v1::AskRequest> WaitAsked(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return asked_.size() >= n; })) {
      return std::nullopt;
    }
    return asked_[n - 1];
  }
  size_t asked() {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<netapproval::v1::AskRequest> asked_;
  std::deque<netapproval::v1::AskResponse::Outcome> outcomes_;
};

class AskModeTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    network_.set_egress(cfg::EGRESS_MODE_ASK);
    network_.set_ask_timeout_seconds(5);
    scripted_ = std::make_shared<ScriptedApprovals>();
    approvals_ = scripted_;
  }
  std::shared_ptr<ScriptedApprovals> scripted_;
};

TEST_F(AskModeTest, UnlistedNameIsHeldUntilAllowedOnceAndOnlyThenRouted) {
  Start();
  AttachOk();
  absl::StatusOr<dns::Response> resp = absl::UnknownError("not asked");
  std::thread asker([&] { resp = Ask("other.test"); });
  std::optional<netapproval::v1::AskRequest> asked = scripted_->WaitAsked(1);
  ASSERT_TRUE(asked.has_value());
  EXPECT_EQ(asked->session_id(), kServiceSessionId);
  EXPECT_EQ(asked->name(), "other.test");
  EXPECT_EQ(asked->timeout_seconds(), 5u);
  ASSERT_EQ(asked->addresses_size(), 1);
  EXPECT_EQ(asked->addresses(0).address(), "198.51.100.10");
  EXPECT_TRUE(asked->addresses(0).allowed());
  ASSERT_TRUE(test::WaitFor([&] { return router_->holds() >= 1; }, std::chrono::seconds(5)));
  EXPECT_EQ(router_->Table().count("198.51.100.10/32"), 0u) << "no route before a decision";
  scripted_->Decide(netapproval::v1::AskResponse::OUTCOME_ONCE);
  asker.join();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
  ASSERT_EQ(resp->answers.size(), 1u);
  EXPECT_EQ(router_->Table()["198.51.100.10/32"], "allow");
  EXPECT_TRUE(Logged(pb::LOG_KIND_NAME_HELD, "other.test"));
  EXPECT_TRUE(Logged(pb::LOG_KIND_NAME_DECIDED, "other.test"));
  // Once: the next query asks again.
  std::thread again([&] { resp = Ask("other.test"); });
  ASSERT_TRUE(scripted_->WaitAsked(2).has_value());
  scripted_->Decide(netapproval::v1::AskResponse::OUTCOME_EXPIRED);
  again.join();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
}

TEST_F(AskModeTest, InterceptedNameApprovedOnceGetsTheProxyAndTheProxyItsAddresses) {
  InterceptForSecret("other.test");
  Start();
  AttachOk();
  pb::ResolveUpstreamResponse up;
  ASSERT_TRUE(ResolveUpstream("other.test", &up).ok());
  EXPECT_NE(up.refused().find("not listed"), std::string::npos) << "not before an approval";
  absl::StatusOr<dns::Response> resp = absl::UnknownError("not asked");
  std::thread asker([&] { resp = Ask("other.test"); });
  ASSERT_TRUE(scripted_->WaitAsked(1).has_value());
  scripted_->Decide(netapproval::v1::AskResponse::OUTCOME_ONCE);
  asker.join();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
  ASSERT_EQ(resp->answers.size(), 1u);
  EXPECT_EQ(RecordAddress(resp->answers[0]).Address(), "127.0.80.1");
  EXPECT_EQ(router_->Table().count("198.51.100.10/32"), 0u);
  // The proxy, following the sandbox's connection, resolves the approved
  // name; its route goes in.
  grpc::Status st = ResolveUpstream("other.test", &up);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(up.addresses_size(), 1) << up.refused();
  EXPECT_EQ(up.addresses(0), "198.51.100.10");
  EXPECT_EQ(router_->Table()["198.51.100.10/32"], "allow");
  // Past the answer's TTL the approval no longer serves the proxy.
  clock_ += 61;
  ASSERT_TRUE(ResolveUpstream("other.test", &up).ok());
  EXPECT_TRUE(up.addresses().empty());
}

TEST_F(AskModeTest, ApprovedNameAnsweringAPrivateAddressKeepsItRefused) {
  Start();
  AttachOk();
  auto priv = Ask("private.test");
  ASSERT_TRUE(priv.ok()) << priv.status();
  EXPECT_EQ(priv->rcode, dns::Rcode::kRefused) << "nothing to ask about";
  EXPECT_EQ(scripted_->asked(), 0u);
  absl::StatusOr<dns::Response> resp = absl::UnknownError("not asked");
  std::thread asker([&] { resp = Ask("mixedask.test"); });
  std::optional<netapproval::v1::AskRequest> asked = scripted_->WaitAsked(1);
  ASSERT_TRUE(asked.has_value());
  ASSERT_EQ(asked->addresses_size(), 2);
  for (const auto& a : asked->addresses()) {
    EXPECT_EQ(a.allowed(), a.address() == "198.51.100.11") << a.address();
    if (!a.allowed()) {
      EXPECT_NE(a.rule_text().find("10.0.0.0/8"), std::string::npos) << a.rule_text();
    }
  }
  scripted_->Decide(netapproval::v1::AskResponse::OUTCOME_SESSION);
  asker.join();
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->answers.size(), 1u);
  EXPECT_EQ(resp->answers[0].address[3], 11);
  EXPECT_EQ(router_->Table().count("10.1.2.5/32"), 0u);
  // Session scope: a live allow, so the next query is answered unasked.
  auto next = Ask("mixedask.test");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->rcode, dns::Rcode::kNoError);
  EXPECT_EQ(scripted_->asked(), 1u);
}

TEST_F(AskModeTest, DenyRefusesAndLaterQueriesAreRefusedUnasked) {
  Start();
  AttachOk();
  absl::StatusOr<dns::Response> resp = absl::UnknownError("not asked");
  std::thread asker([&] { resp = Ask("other.test", dns::kTypeAaaa); });
  ASSERT_TRUE(scripted_->WaitAsked(1).has_value());
  scripted_->Decide(netapproval::v1::AskResponse::OUTCOME_DENIED);
  asker.join();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
  auto again = Ask("other.test");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(scripted_->asked(), 1u);
  EXPECT_EQ(router_->Table().count("198.51.100.10/32"), 0u);
}

TEST_F(AskModeTest, NoBrokerRefuses) {
  approvals_ = nullptr;  // brokerd.sock of the test's runtime directory: absent
  Start();
  AttachOk();
  auto resp = Ask("other.test");
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(router_->Table().count("198.51.100.10/32"), 0u);
}

}  // namespace
}  // namespace lazaret::netpolicyd
