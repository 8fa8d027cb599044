// The real lazaret-netrouter binary in a fresh network namespace with a
// veth test host, driven over its Unix socket with the generated gRPC
// client: ApplyPolicy, GetPolicy, LookupRoute, GetNamespaceInfo, RelayDns
// and the inbound relays end to end, with connections and DNS queries made
// from inside the namespace. Needs root.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "services/common/fs/sha256.h"
#include "services/common/unix_server.h"
#include "sidecar/testing/test_network.h"
#include "tests/support/test_support.h"

namespace lazaret {
namespace {

namespace pb = ::lazaret::netrouter::v1;
namespace tn = ::lazaret::netrouter::testing;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

class NetRouterApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    auto net = tn::TestNetwork::Create();
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = *std::move(net);
    ASSERT_TRUE(net_->Listen({80}, {80}).ok());
    socket_ = dir_.path() + "/router.sock";
    log_ = dir_.path() + "/router.log";
    const std::string binary = test::Binary("lazaret-netrouter");
    const std::string runtime = "--runtime-dir=" + dir_.path();
    const std::string sock = "--socket=" + socket_;
    const std::string ns = net_->router_ns();
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0) dup2(fd, 2);
      execlp("ip", "ip", "netns", "exec", ns.c_str(), binary.c_str(), runtime.c_str(), sock.c_str(),
             nullptr);
      _exit(127);
    }
    ASSERT_TRUE(test::WaitFor([&] { return CheckHealth(socket_, 200).ok(); }, 10s))
        << test::ReadFile(log_);
    stub_ = pb::NetRouterService::NewStub(DialUnix(socket_));
  }

  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::ReadFile(log_);
    }
    net_.reset();
  }

  static void Add(pb::ApplyPolicyRequest* req, const std::string& cidr, pb::RouteAction action) {
    pb::Route* r = req->add_routes();
    r->mutable_destination()->set_prefix(cidr);
    r->set_action(action);
  }

  pb::ApplyPolicyRequest AllowA(uint64_t generation) {
    pb::ApplyPolicyRequest req;
    req.set_generation(generation);
    Add(&req, "0.0.0.0/0", pb::ROUTE_ACTION_PROHIBIT);
    Add(&req, "::/0", pb::ROUTE_ACTION_PROHIBIT);
    Add(&req, "203.0.113.5/32", pb::ROUTE_ACTION_ALLOW);
    Add(&req, "2001:db8:99::5/128", pb::ROUTE_ACTION_ALLOW);
    return req;
  }

  grpc::Status Apply(const pb::ApplyPolicyRequest& req, pb::ApplyPolicyResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    return stub_->ApplyPolicy(&ctx, req, resp);
  }

  pb::LookupRouteResponse Lookup(const std::string& address, uint32_t port, pb::Protocol proto) {
    grpc::ClientContext ctx;
    pb::LookupRouteRequest req;
    req.set_address(address);
    req.set_port(port);
    req.set_protocol(proto);
    pb::LookupRouteResponse resp;
    grpc::Status s = stub_->LookupRoute(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  test::TempDir dir_{"lzr"};
  std::unique_ptr<tn::TestNetwork> net_;
  std::string socket_;
  std::string log_;
  pid_t pid_ = -1;
  std::unique_ptr<pb::NetRouterService::Stub> stub_;
};

TEST_F(NetRouterApiTest, KeepsOnlyNetAdmin) {
  EXPECT_EQ(test::ProcStatusHex(pid_, "CapEff"), 0x1000u);
  EXPECT_EQ(test::ProcStatusHex(pid_, "CapBnd"), 0x1000u);
}

TEST_F(NetRouterApiTest, AppliesReadsBackAndExplainsThePolicy) {
  grpc::ClientContext get0;
  pb::GetPolicyResponse before;
  ASSERT_TRUE(stub_->GetPolicy(&get0, pb::GetPolicyRequest(), &before).ok());
  EXPECT_EQ(before.generation(), 0u);
  ASSERT_EQ(before.routes_size(), 2) << "closed from the start: only the prohibit defaults";
  EXPECT_EQ(before.routes(0).action(), pb::ROUTE_ACTION_PROHIBIT);

  pb::ApplyPolicyResponse applied;
  grpc::Status s = Apply(AllowA(1), &applied);
  ASSERT_TRUE(s.ok()) << s.error_message();
  fs::Sha256 sha;
  sha.Update("prohibit 0.0.0.0/0\nallow 203.0.113.5/32\nprohibit ::/0\nallow 2001:db8:99::5/128\n");
  EXPECT_EQ(applied.digest(), sha.HexDigest());
  EXPECT_EQ(applied.generation(), 1u);
  EXPECT_EQ(applied.routes(), 4u);
  EXPECT_EQ(applied.added(), 2u);

  grpc::ClientContext get1;
  pb::GetPolicyResponse after;
  ASSERT_TRUE(stub_->GetPolicy(&get1, pb::GetPolicyRequest(), &after).ok());
  EXPECT_EQ(after.digest(), applied.digest());
  EXPECT_EQ(after.generation(), 1u);
  EXPECT_FALSE(after.failed_closed());

  ASSERT_TRUE(net_->Enter().ok());
  EXPECT_EQ(tn::TryConnect(tn::kRemoteAV4, 80, 1000ms), 0);
  EXPECT_EQ(tn::TryConnect(tn::kRemoteBV4, 80, 1000ms), EACCES);
  EXPECT_EQ(tn::TryConnect(tn::kRemoteAV6, 80, 1000ms), 0);
  net_->Leave();

  pb::LookupRouteResponse a = Lookup(tn::kRemoteAV4, 80, pb::PROTOCOL_TCP);
  EXPECT_TRUE(a.allowed());
  EXPECT_EQ(a.route_type(), "unicast");
  EXPECT_EQ(a.policy_route().prefix(), "203.0.113.5/32");
  EXPECT_EQ(a.device(), "va");
  pb::LookupRouteResponse b = Lookup(tn::kRemoteBV4, 80, pb::PROTOCOL_TCP);
  EXPECT_FALSE(b.allowed());
  EXPECT_EQ(b.route_type(), "prohibit");
  EXPECT_EQ(b.policy_route().prefix(), "0.0.0.0/0");
  EXPECT_EQ(b.rule(), "");
  pb::LookupRouteResponse dns = Lookup(tn::kRemoteAV6, 853, pb::PROTOCOL_TCP);
  EXPECT_FALSE(dns.allowed());
  EXPECT_THAT(dns.rule(), HasSubstr("pref 90: tcp dport 853"));
  EXPECT_EQ(dns.policy_route().prefix(), "");
  pb::LookupRouteResponse local = Lookup("127.0.0.1", 53, pb::PROTOCOL_UDP);
  EXPECT_TRUE(local.allowed());
  EXPECT_EQ(local.route_type(), "local");

  // Generation rules over the wire.
  pb::ApplyPolicyResponse r;
  EXPECT_EQ(Apply(AllowA(1), &r).error_code(), grpc::StatusCode::OK) << "same generation: no-op";
  EXPECT_EQ(r.digest(), applied.digest());
  pb::ApplyPolicyRequest other = AllowA(1);
  Add(&other, "198.51.100.0/24", pb::ROUTE_ACTION_ALLOW);
  EXPECT_EQ(Apply(other, &r).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  pb::ApplyPolicyRequest zero = AllowA(0);
  EXPECT_EQ(Apply(zero, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::ApplyPolicyRequest bad = AllowA(2);
  Add(&bad, "10.1.2.3/8", pb::ROUTE_ACTION_ALLOW);
  grpc::Status refused = Apply(bad, &r);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("did you mean \"10.0.0.0/8\""));
}

TEST_F(NetRouterApiTest, ReportsTheNamespacesAddressesGatewaysAndLinkServices) {
  grpc::ClientContext ctx;
  pb::GetNamespaceInfoResponse info;
  ASSERT_TRUE(stub_->GetNamespaceInfo(&ctx, pb::GetNamespaceInfoRequest(), &info).ok());
  std::vector<std::string> addresses;
  for (const auto& a : info.addresses()) {
    addresses.push_back(absl::StrCat(a.interface(), " ", a.address().prefix()));
  }
  EXPECT_THAT(addresses, ::testing::IsSupersetOf({"lo 127.0.0.1/32", "va 198.51.100.100/32",
                                                  "va 2001:db8:1::100/128", "lo ::1/128"}));
  EXPECT_THAT(info.gateways(), ::testing::UnorderedElementsAre("198.51.100.1", "2001:db8:1::1"));
  EXPECT_THAT(info.link_services(),
              ::testing::UnorderedElementsAre("198.51.100.3", "2001:db8:1::3"));
  EXPECT_TRUE(info.ipv6());
}

TEST_F(NetRouterApiTest, AcceptsTheLargestPolicy) {
  pb::ApplyPolicyRequest req;
  req.set_generation(1);
  Add(&req, "0.0.0.0/0", pb::ROUTE_ACTION_PROHIBIT);
  Add(&req, "::/0", pb::ROUTE_ACTION_PROHIBIT);
  for (int i = 0; i < 100'000 - 2; ++i) {
    Add(&req,
        absl::StrFormat("2001:db8:abcd:ef0%x:%x:1234:5678:9a00/120", i / 65536 + 1, i % 65536),
        pb::ROUTE_ACTION_PROHIBIT);
  }
  ASSERT_GT(req.ByteSizeLong(), 4u << 20) << "larger than gRPC's default limit";
  pb::ApplyPolicyResponse r;
  grpc::Status s = Apply(req, &r);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(r.routes(), 100'000u);
  Add(&req, "2001:db8:ffff::/48", pb::ROUTE_ACTION_PROHIBIT);
  req.set_generation(2);
  EXPECT_EQ(Apply(req, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "over the bound";
}

std::string Query(uint16_t id) {
  std::string q = {
      static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  q += std::string(
      "\x07"
      "example"
      "\x03"
      "com\x00\x00\x01\x00\x01",
      17);
  return q;
}

std::string Canned(const std::string& query) {
  std::string a = query;
  a[2] = static_cast<char>(a[2] | 0x80);
  return a + "canned-answer";
}

std::string AskUdp(const std::string& query) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(53);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  sendto(fd, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  pollfd p{fd, POLLIN, 0};
  std::string out;
  char buf[4096];
  if (poll(&p, 1, 7000) > 0) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) out.assign(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

std::string AskTcp6(const std::string& query) {
  const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(53);
  inet_pton(AF_INET6, "::1", &a.sin6_addr);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    std::string framed = {static_cast<char>(query.size() >> 8),
                          static_cast<char>(query.size() & 0xff)};
    framed += query;
    (void)!write(fd, framed.data(), framed.size());
    timeval tv{7, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
      out.append(buf, static_cast<size_t>(n));
      if (out.size() >= 2 &&
          out.size() >= 2u + ((static_cast<uint8_t>(out[0]) << 8) | static_cast<uint8_t>(out[1]))) {
        break;
      }
    }
  }
  close(fd);
  return out.size() >= 2 ? out.substr(2) : "";
}

TEST_F(NetRouterApiTest, RelaysDnsThroughTheStreamAndServfailsWithoutIt) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  auto stream = stub_->RelayDns(&ctx);
  // The router confirms the call with its initial metadata, before any query.
  const auto start = std::chrono::steady_clock::now();
  stream->WaitForInitialMetadata();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  std::vector<pb::DnsQuery> seen;
  std::thread relay([&] {
    pb::DnsQuery q;
    while (stream->Read(&q)) {
      seen.push_back(q);
      pb::DnsAnswer a;
      a.set_id(q.id());
      a.set_message(Canned(q.message()));
      stream->Write(a);
    }
  });
  ASSERT_TRUE(net_->Enter().ok());
  // The stream may still be attaching: wait for the first relayed answer.
  std::string udp;
  ASSERT_TRUE(test::WaitFor(
      [&] {
        udp = AskUdp(Query(0x1111));
        return udp == Canned(Query(0x1111));
      },
      5s))
      << "no relayed answer";
  EXPECT_EQ(AskTcp6(Query(0x2222)), Canned(Query(0x2222)));
  net_->Leave();
  ctx.TryCancel();
  relay.join();
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.back().transport(), pb::DNS_TRANSPORT_TCP);
  EXPECT_EQ(seen.back().message(), Query(0x2222)) << "the query goes out exactly as received";
  EXPECT_NE(seen[seen.size() - 2].id(), seen.back().id());

  ASSERT_TRUE(net_->Enter().ok());
  std::string servfail;
  EXPECT_TRUE(test::WaitFor(
      [&] {
        servfail = AskUdp(Query(0x3333));
        return servfail.size() >= 12 && (servfail[3] & 0x0f) == 2;
      },
      5s))
      << "no SERVFAIL once the stream is gone";
  EXPECT_EQ(servfail.substr(0, 2), Query(0x3333).substr(0, 2));
  net_->Leave();
}

TEST_F(NetRouterApiTest, InboundReachesOnlyTheNamespacesLoopback) {
  // A server on 127.0.0.1:8123 of the router's namespace: a thread enters
  // it to open the socket (setns affects that thread alone).
  int server = -1;
  std::thread opener([&] {
    const int ns = open(("/run/netns/" + net_->router_ns()).c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) return;
    close(ns);
    server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(8123);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(server, 4) != 0) {
      close(server);
      server = -1;
    }
  });
  opener.join();
  ASSERT_GE(server, 0);
  std::thread serve([server] {
    for (;;) {
      const int c = accept(server, nullptr, nullptr);
      if (c < 0) return;
      (void)!write(c, "inside\n", 7);
      close(c);
    }
  });
  pb::InboundPorts ports;
  for (uint32_t p : {8123u, 80u}) {
    grpc::ClientContext ctx;
    pb::InboundPort req;
    req.set_sandbox_port(p);
    ASSERT_TRUE(stub_->OpenInbound(&ctx, req, &ports).ok());
  }
  EXPECT_EQ(ports.ports_size(), 2);
  EXPECT_EQ(test::ReadUnixUntilEof(dir_.path() + "/in/8123.sock"), "inside\n");
  // The test host listens on port 80 of its own address; the router never
  // goes there: nothing on the namespace's loopback, the connection closes.
  EXPECT_EQ(test::ReadUnixUntilEof(dir_.path() + "/in/80.sock"), "");
  {
    grpc::ClientContext ctx;
    pb::InboundPort req;
    req.set_sandbox_port(8123);
    ASSERT_TRUE(stub_->CloseInbound(&ctx, req, &ports).ok());
  }
  EXPECT_EQ(test::ReadUnixUntilEof(dir_.path() + "/in/8123.sock"), "<no connect>");
  {
    grpc::ClientContext ctx;
    pb::InboundPort req;
    req.set_sandbox_port(0);
    EXPECT_EQ(stub_->OpenInbound(&ctx, req, &ports).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  shutdown(server, SHUT_RDWR);
  close(server);
  serve.join();
}

}  // namespace
}  // namespace lazaret
