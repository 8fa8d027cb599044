// lazaret-netpolicyd (in this process: registry, service, resolver) against
// the real lazaret-netrouter running in a fresh network namespace R, joined
// by a veth pair to a second namespace H that plays every remote host (on
// documentation addresses that exist only inside this machine). The
// supervisor and configd are fakes on their sockets; the upstream resolver
// is a TestDnsServer on the host's loopback. Needs root (namespaces) and
// skips otherwise. LAZARET_TEST_NETROUTER names another router binary.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"
#include "services/netpolicyd/dns_message.h"
#include "services/netpolicyd/host_inputs.h"
#include "services/netpolicyd/netpolicyd.h"
#include "services/netpolicyd/test_fakes.h"
#include "tests/support/test_dns_server.h"
#include "tests/support/test_support.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rt = ::lazaret::netrouter::v1;
namespace sv = ::lazaret::supervisor::v1;
namespace cfg = ::lazaret::config::v1;
namespace dns = ::lazaret::netpolicyd::dns;

constexpr char kId[] = "00c0ffee0042";
constexpr char kRemote[] = "203.0.113.5";   // on H's loopback, via the gateway
constexpr char kRemote2[] = "203.0.113.6";  // likewise
constexpr uint16_t kPort = 8080;

// Runs `fn` on a thread inside the namespace `ns` (sockets it opens are
// that namespace's).
template <typename T>
T InNamespace(const std::string& ns, const std::function<T()>& fn) {
  T result{};
  std::thread t([&] {
    int fd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      if (fd >= 0) close(fd);
      return;
    }
    close(fd);
    result = fn();
  });
  t.join();
  return result;
}

// 0 when a TCP connect succeeded, else the errno (ETIMEDOUT after 1 s).
int Connect(const std::string& address, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  int err = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 1000) == 1) {
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      } else {
        err = ETIMEDOUT;
      }
    }
  }
  close(fd);
  return err;
}

// A UDP DNS query to the namespace's 127.0.0.1:53 (the router).
std::optional<dns::Response> AskRouter(const std::string& name, uint16_t type) {
  std::vector<std::string> labels = absl::StrSplit(name, '.');
  dns::Question q{labels, type, dns::kClassIn};
  std::string query = dns::BuildQuery(0x7777, q);
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  timeval tv{.tv_sec = 8, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(53);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sendto(fd, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  std::string buf(4096, '\0');
  ssize_t n = recv(fd, buf.data(), buf.size(), 0);
  close(fd);
  if (n <= 0) return std::nullopt;
  auto resp = dns::ParseResponse(absl::string_view(buf.data(), n), 0x7777, q);
  if (!resp.ok()) return std::nullopt;
  return *resp;
}

class NetpolicydRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: it creates network namespaces";
    const char* override_bin = std::getenv("LAZARET_TEST_NETROUTER");
    router_bin_ = override_bin != nullptr ? override_bin : test::Binary("lazaret-netrouter");
    if (access(router_bin_.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << router_bin_;
    r_ = absl::StrCat("lzt-policyd-r-", getpid());
    h_ = absl::StrCat("lzt-policyd-h-", getpid());
    made_namespaces_ = true;
    for (const auto& cmd : std::vector<std::vector<std::string>>{
             {"ip", "netns", "add", r_},
             {"ip", "netns", "add", h_},
             {"ip", "-n", r_, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns",
              h_},
             {"ip", "-n", r_, "link", "set", "lo", "up"},
             {"ip", "-n", h_, "link", "set", "lo", "up"},
             {"ip", "-n", r_, "addr", "add", "198.51.100.100/24", "dev", "va"},
             {"ip", "-n", h_, "addr", "add", "198.51.100.1/24", "dev", "vb"},
             {"ip", "-n", h_, "addr", "add", absl::StrCat(kRemote, "/32"), "dev", "lo"},
             {"ip", "-n", h_, "addr", "add", absl::StrCat(kRemote2, "/32"), "dev", "lo"},
             {"ip", "-n", r_, "link", "set", "va", "up"},
             {"ip", "-n", h_, "link", "set", "vb", "up"},
             {"ip", "-n", r_, "route", "add", "default", "via", "198.51.100.1"},
             {"ip", "netns", "exec", r_, "sysctl", "-qw", "net.ipv4.ip_unprivileged_port_start=53"},
         }) {
      test::CommandResult res = test::Run(cmd);
      ASSERT_EQ(res.exit_code, 0) << absl::StrJoin(cmd, " ") << ": " << res.err;
    }
    StartListener();
    StartRouter();
    StartService();
  }

  void TearDown() override {
    if (registry_ != nullptr) registry_->Stop();
    service_server_.reset();
    if (router_pid_ > 0) {
      kill(router_pid_, SIGTERM);
      int status;
      waitpid(router_pid_, &status, 0);
    }
    stop_listener_ = true;
    if (listener_.joinable()) listener_.join();
    if (made_namespaces_) {
      test::Run({"ip", "netns", "del", r_});
      test::Run({"ip", "netns", "del", h_});
    }
  }

  // TCP accept-and-close on H's kPort.
  void StartListener() {
    std::atomic<bool> ready{false};
    listener_ = std::thread([this, &ready] {
      int ns = open(("/run/netns/" + h_).c_str(), O_RDONLY | O_CLOEXEC);
      setns(ns, CLONE_NEWNET);
      close(ns);
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(kPort);
      bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
      listen(fd, 64);
      ready = true;
      while (!stop_listener_) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 50) == 1) {
          int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
          if (c >= 0) close(c);
        }
      }
      close(fd);
    });
    ASSERT_TRUE(test::WaitFor([&] { return ready.load(); }, std::chrono::seconds(5)));
  }

  void StartRouter() {
    std::string dir = absl::StrCat(dir_.path(), "/sessions/", kId, "/router");
    test::Run({"mkdir", "-p", dir});
    chmod(dir.c_str(), 0700);
    router_socket_ = RouterSocketPath(dir_.path(), kId);
    std::string ns_path = "/run/netns/" + r_;
    std::string a0 = router_bin_, a1 = "--runtime-dir=" + dir, a2 = "--socket=" + router_socket_;
    char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
    int ns = open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(ns, 0);
    router_pid_ = fork();
    if (router_pid_ == 0) {
      if (setns(ns, CLONE_NEWNET) != 0) _exit(126);
      execv(argv[0], argv);
      _exit(127);
    }
    close(ns);
    ASSERT_TRUE(test::WaitFor([&] { return CheckHealth(router_socket_, 200).ok(); },
                              std::chrono::seconds(10)))
        << "the router did not answer on " << router_socket_;
    // A router without the policy API cannot be tested against.
    auto stub = rt::NetRouterService::NewStub(DialUnix(router_socket_));
    grpc::ClientContext ctx;
    rt::GetPolicyResponse resp;
    grpc::Status st = stub->GetPolicy(&ctx, rt::GetPolicyRequest(), &resp);
    if (st.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      GTEST_SKIP() << router_bin_ << " has no GetPolicy/ApplyPolicy yet";
    }
    ASSERT_TRUE(st.ok()) << st.error_message();
  }

  void StartService() {
    test::TestDnsServerOptions dns;
    for (const char* r : {"api.example.test=A:203.0.113.5@30", "rebind.example.test=A:10.1.2.3",
                          "other.test=A:203.0.113.6"}) {
      dns.records.push_back(*test::ParseTestDnsRecord(r));
    }
    auto upstream = test::TestDnsServer::Start(dns);
    ASSERT_TRUE(upstream.ok()) << upstream.status();
    upstream_ = *std::move(upstream);

    sv::SessionInfo info;
    info.mutable_record()->set_id(kId);
    info.mutable_record()->set_profile("work");
    info.mutable_record()->set_workspace("/nonexistent/project");
    info.set_state(sv::SESSION_STATE_ATTACHED);
    supervisor_.Add(info);
    cfg::NetworkPolicy network;
    network.add_deny()->mutable_cidr()->set_prefix("10.0.0.0/8");
    network.add_allow_domains()->set_pattern("*.example.test");
    network.add_dns_upstream(upstream_->address());
    configd_.Set(network);
    auto sup = testing::Serve(&supervisor_, SocketPath(dir_.path(), "supervisor"));
    auto conf = testing::Serve(&configd_, SocketPath(dir_.path(), "configd"));
    ASSERT_TRUE(sup.ok() && conf.ok());
    supervisor_server_ = *std::move(sup);
    configd_server_ = *std::move(conf);

    RegistryOptions options;
    options.watch_supervisor = false;
    registry_ = std::make_shared<Registry>(dir_.path(), options);
    registry_->Start();
    impl_ = std::make_unique<NetPolicyServiceImpl>(registry_);
    auto server = testing::Serve(impl_.get(), SocketPath(dir_.path(), "netpolicyd"));
    ASSERT_TRUE(server.ok()) << server.status();
    service_server_ = *std::move(server);
    stub_ = pb::NetPolicyService::NewStub(DialUnix(SocketPath(dir_.path(), "netpolicyd")));
  }

  pb::PolicyApplied Attach() {
    grpc::ClientContext ctx;
    pb::AttachSessionRequest req;
    req.mutable_session()->set_id(kId);
    pb::PolicyApplied applied;
    grpc::Status st = stub_->AttachSession(&ctx, req, &applied);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return applied;
  }
  grpc::Status Change(pb::RuleAction action, const std::string& cidr) {
    grpc::ClientContext ctx;
    pb::ChangeSessionRequest req;
    req.mutable_session()->set_id(kId);
    req.set_action(action);
    req.mutable_cidr()->set_prefix(cidr);
    pb::PolicyApplied applied;
    return stub_->ChangeSession(&ctx, req, &applied);
  }
  int ConnectFromSandbox(const std::string& address) {
    return InNamespace<int>(r_, [&] { return Connect(address, kPort); });
  }
  std::optional<dns::Response> AskFromSandbox(const std::string& name,
                                              uint16_t type = dns::kTypeA) {
    return InNamespace<std::optional<dns::Response>>(r_, [&] { return AskRouter(name, type); });
  }

  test::TempDir dir_{"lzi"};
  std::string router_bin_, r_, h_, router_socket_;
  bool made_namespaces_ = false;
  pid_t router_pid_ = -1;
  std::atomic<bool> stop_listener_{false};
  std::thread listener_;
  testing::FakeSupervisor supervisor_;
  testing::FakeConfigd configd_;
  std::unique_ptr<test::TestDnsServer> upstream_;
  std::unique_ptr<GrpcUnixServer> supervisor_server_, configd_server_, service_server_;
  std::shared_ptr<Registry> registry_;
  std::unique_ptr<NetPolicyServiceImpl> impl_;
  std::unique_ptr<pb::NetPolicyService::Stub> stub_;
};

TEST_F(NetpolicydRouterTest, AttachAppliesTheTableTheRouterReadsBack) {
  pb::PolicyApplied applied = Attach();
  EXPECT_GE(applied.generation(), 1u);
  grpc::ClientContext ctx;
  pb::ShowPolicyRequest req;
  req.mutable_session()->set_id(kId);
  pb::SessionPolicy policy;
  ASSERT_TRUE(stub_->ShowPolicy(&ctx, req, &policy).ok());
  EXPECT_TRUE(policy.router_reachable());
  EXPECT_EQ(static_cast<uint32_t>(policy.installed_size()), applied.routes());
  EXPECT_EQ(policy.digest(), applied.digest());
  // Default deny: the remote host is refused at once, the gateway too.
  EXPECT_EQ(ConnectFromSandbox(kRemote), EACCES);
  EXPECT_EQ(ConnectFromSandbox("198.51.100.1"), EACCES);
}

TEST_F(NetpolicydRouterTest, ListedNameResolvesThroughTheRouterAndConnects) {
  Attach();
  ASSERT_EQ(ConnectFromSandbox(kRemote), EACCES);
  std::optional<dns::Response> resp = AskFromSandbox("api.example.test");
  ASSERT_TRUE(resp.has_value()) << "no answer from the router's 127.0.0.1:53";
  EXPECT_EQ(resp->rcode, dns::Rcode::kNoError);
  ASSERT_EQ(resp->answers.size(), 1u);
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, resp->answers[0].address.data(), text, sizeof(text));
  EXPECT_STREQ(text, kRemote);
  // The route was installed before the answer: the next connect works.
  EXPECT_EQ(ConnectFromSandbox(kRemote), 0);
  EXPECT_EQ(upstream_->QueryCount("api.example.test"), 1);
}

TEST_F(NetpolicydRouterTest, UnlistedNameIsRefusedAndTheUpstreamSeesNothing) {
  Attach();
  std::optional<dns::Response> resp = AskFromSandbox("other.test");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(upstream_->QueryCount("other.test"), 0);
  EXPECT_EQ(upstream_->TotalQueries(), 0);
  EXPECT_EQ(ConnectFromSandbox(kRemote2), EACCES);
}

TEST_F(NetpolicydRouterTest, ListedNameAnsweringAPrivateAddressIsRefused) {
  Attach();
  std::optional<dns::Response> resp = AskFromSandbox("rebind.example.test");
  ASSERT_TRUE(resp.has_value());
  EXPECT_EQ(resp->rcode, dns::Rcode::kRefused);
  EXPECT_EQ(upstream_->QueryCount("rebind.example.test"), 1);
}

TEST_F(NetpolicydRouterTest, LiveAllowAndDenyApplyToTheNextConnect) {
  Attach();
  EXPECT_EQ(ConnectFromSandbox(kRemote2), EACCES);
  ASSERT_TRUE(Change(pb::RULE_ACTION_ALLOW, "203.0.113.6/32").ok());
  EXPECT_EQ(ConnectFromSandbox(kRemote2), 0);
  ASSERT_TRUE(Change(pb::RULE_ACTION_DENY, "203.0.113.0/24").ok());
  EXPECT_EQ(ConnectFromSandbox(kRemote2), 0);  // the longer allow still wins
  ASSERT_TRUE(Change(pb::RULE_ACTION_DENY, "203.0.113.6/32").ok());
  EXPECT_EQ(ConnectFromSandbox(kRemote2), EACCES);
}

TEST_F(NetpolicydRouterTest, TestDestinationAgreesWithTheKernel) {
  Attach();
  ASSERT_TRUE(Change(pb::RULE_ACTION_ALLOW, "203.0.113.6/32").ok());
  for (const auto& [host, allowed] :
       std::vector<std::pair<std::string, bool>>{{kRemote, false}, {kRemote2, true}}) {
    grpc::ClientContext ctx;
    pb::TestDestinationRequest req;
    req.mutable_session()->set_id(kId);
    req.set_host(host);
    req.set_port(kPort);
    pb::TestDestinationResponse resp;
    ASSERT_TRUE(stub_->TestDestination(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.allowed(), allowed) << host;
    ASSERT_EQ(resp.addresses_size(), 1);
    EXPECT_EQ(resp.addresses(0).kernel().allowed(), allowed)
        << host << " " << resp.addresses(0).kernel().route_type();
  }
}

}  // namespace
}  // namespace lazaret::netpolicyd
