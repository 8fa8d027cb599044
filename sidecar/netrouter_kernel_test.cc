// The router's enforcement against the real kernel: each test gets a fresh
// network namespace with a veth to a test host namespace (test_network.h),
// installs the closed table, rules and neighbour discipline as the router
// does at start, and then attacks it from inside. Needs root.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "services/common/fs/sha256.h"
#include "sidecar/dns_relay.h"
#include "sidecar/egress_listener.h"
#include "sidecar/multicast_guard.h"
#include "sidecar/neighbours.h"
#include "sidecar/netlink_routes.h"
#include "sidecar/policy_engine.h"
#include "sidecar/policy_rules.h"
#include "sidecar/testing/test_network.h"

namespace lazaret::netrouter {
namespace {

using namespace std::chrono_literals;
using testing::TestNetwork;
using Clock = std::chrono::steady_clock;

struct Entry {
  const char* cidr;
  Action action;
};

PolicySet Policy(std::initializer_list<Entry> entries) {
  std::vector<PolicyRoute> routes = ClosedPolicy();
  for (const Entry& e : entries) {
    absl::StatusOr<Prefix> p = ParsePrefix(e.cidr);
    EXPECT_TRUE(p.ok()) << p.status();
    if (p->length == 0) {
      for (PolicyRoute& r : routes) {
        if (r.prefix == *p) r.action = e.action;
      }
      continue;
    }
    routes.push_back({*p, e.action});
  }
  absl::StatusOr<PolicySet> s = MakePolicySet(routes);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

class RouterKernelTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(/*discipline=*/true); }

  void Start(bool discipline) {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    absl::StatusOr<std::unique_ptr<TestNetwork>> net = TestNetwork::Create();
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = *std::move(net);
    ASSERT_TRUE(net_->Listen({80, 53, 853}, {53, 80}).ok());
    ASSERT_TRUE(net_->Enter().ok());
    absl::StatusOr<std::unique_ptr<PolicyEngine>> engine = PolicyEngine::Create();
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
    ASSERT_TRUE(engine_->InstallClosedTable().ok());
    if (discipline) {
      absl::StatusOr<std::unique_ptr<RtnlSocket>> rtnl = RtnlSocket::Open();
      ASSERT_TRUE(rtnl.ok());
      absl::Status s = EnforceNeighbourDiscipline(**rtnl, kGatewayResolveTimeout);
      ASSERT_TRUE(s.ok()) << s;
      // As the router does: every test's unicast runs through the guard.
      absl::StatusOr<NlSockPtr> tc = ConnectLibnl();
      ASSERT_TRUE(tc.ok());
      s = DropMulticastEgress(tc->get());
      ASSERT_TRUE(s.ok()) << s;
    }
  }

  void TearDown() override {
    engine_.reset();
    net_.reset();
  }

  ApplyResult Apply(uint64_t generation, const PolicySet& set) {
    absl::StatusOr<ApplyResult> r = engine_->Apply(generation, set);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : ApplyResult{};
  }

  // The usual policy: the two "A" remote hosts allowed, all else denied.
  PolicySet AllowA() {
    return Policy({{"203.0.113.5/32", Action::kAllow}, {"2001:db8:99::5/128", Action::kAllow}});
  }

  std::unique_ptr<TestNetwork> net_;
  std::unique_ptr<PolicyEngine> engine_;
};

int Connect(const std::string& address, uint16_t port, const std::function<void(int)>& setup = {}) {
  return testing::TryConnect(address, port, 1000ms, setup);
}

TEST_F(RouterKernelTest, TheNamespaceStartsClosed) {
  EXPECT_EQ(Connect(testing::kRemoteAV4, 80), EACCES);
  EXPECT_EQ(Connect(testing::kRemoteAV6, 80), EACCES);
  EXPECT_EQ(Connect(testing::kGatewayV4, 80), EACCES);
  EXPECT_EQ(Connect("127.0.0.1", 9), ECONNREFUSED) << "loopback is decided by the local table";
}

TEST_F(RouterKernelTest, AllowedHostReachableDeniedRefusedAtOnce) {
  Apply(1, AllowA());
  EXPECT_EQ(Connect(testing::kRemoteAV4, 80), 0);
  EXPECT_EQ(Connect(testing::kRemoteAV6, 80), 0);
  for (const char* denied : {testing::kRemoteBV4, testing::kRemoteBV6, testing::kOnLinkV4,
                             testing::kOnLinkV6, testing::kGatewayV4, testing::kGatewayV6}) {
    const auto start = Clock::now();
    EXPECT_EQ(Connect(denied, 80), EACCES) << denied;
    EXPECT_LT(Clock::now() - start, 100ms) << denied;
  }
}

TEST_F(RouterKernelTest, SoMarkChangesNothing) {
  Apply(1, AllowA());
  for (uint32_t mark : {1u, 100u, 0x10000u, 0xffffffffu}) {
    auto set_mark = [mark](int fd) {
      ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)), 0);
    };
    EXPECT_EQ(Connect(testing::kRemoteBV4, 80, set_mark), EACCES) << mark;
    EXPECT_EQ(Connect(testing::kRemoteBV6, 80, set_mark), EACCES) << mark;
    EXPECT_EQ(Connect(testing::kRemoteAV4, 80, set_mark), 0) << mark;
  }
}

void BindToVa(int fd) { ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, "va", 3), 0); }

TEST_F(RouterKernelTest, BoundToTheDeviceAProhibitedOnLinkHostStaysUnreachable) {
  Apply(1, AllowA());
  EXPECT_NE(Connect(testing::kOnLinkV4, 80, BindToVa), 0);
  EXPECT_NE(Connect(testing::kOnLinkV6, 80, BindToVa), 0);
  EXPECT_NE(Connect(testing::kRemoteBV4, 80, BindToVa), 0);
  // The pinned gateway still carries the allowed path of a bound socket.
  EXPECT_EQ(Connect(testing::kRemoteAV4, 80, BindToVa), 0);
  EXPECT_EQ(Connect(testing::kRemoteAV6, 80, BindToVa), 0);
}

class NoDisciplineTest : public RouterKernelTest {
 protected:
  void SetUp() override { Start(/*discipline=*/false); }
};

// The threat the neighbour discipline answers, shown without it.
TEST_F(NoDisciplineTest, WithoutTheNeighbourDisciplineABoundSocketGetsThrough) {
  Apply(1, AllowA());
  EXPECT_EQ(Connect(testing::kOnLinkV4, 80), EACCES);
  EXPECT_EQ(Connect(testing::kOnLinkV4, 80, BindToVa), 0);
}

TEST_F(RouterKernelTest, ScopedIpv6DestinationsAreRefusedWhateverThePolicy) {
  // An IPv6 lookup with a zone takes only routes on that interface, so the
  // table's prohibit fe80::/10 alone would never match it (the connect went
  // on-link): the pref-95 rule refuses link-local outright, even under a
  // policy that allows the whole space.
  Apply(1, Policy({{"::/0", Action::kAllow}, {"0.0.0.0/0", Action::kAllow}}));
  EXPECT_EQ(Connect(testing::kRemoteAV6, 80), 0);
  EXPECT_EQ(Connect(testing::kLinkLocalV6, 80), EACCES);
  EXPECT_EQ(Connect(testing::kLinkLocalV6, 80, BindToVa), EACCES);
}

TEST_F(RouterKernelTest, DontRouteToAProhibitedAddressIsRefused) {
  Apply(1, AllowA());
  auto dontroute = [](int fd) {
    int one = 1;
    ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_DONTROUTE, &one, sizeof(one)), 0);
  };
  EXPECT_EQ(Connect(testing::kOnLinkV4, 80, dontroute), EACCES);
  EXPECT_EQ(Connect(testing::kRemoteBV4, 80, dontroute), EACCES);
  EXPECT_EQ(Connect(testing::kOnLinkV6, 80, dontroute), EACCES);
  EXPECT_EQ(testing::TryUdp(testing::kOnLinkV4, 80, 500ms, MSG_DONTROUTE), EACCES);
  EXPECT_EQ(testing::TryUdp(testing::kOnLinkV6, 80, 500ms, MSG_DONTROUTE), EACCES);
  EXPECT_EQ(testing::TryUdp(testing::kRemoteAV4, 80, 1000ms), 0) << "the echo works when allowed";
}

// connect() from a child that changed its uid; no allocation after fork.
int ConnectAsUid(uid_t uid, const char* address, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len;
  if (std::strchr(address, ':') != nullptr) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    inet_pton(AF_INET6, address, &a->sin6_addr);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    inet_pton(AF_INET, address, &a->sin_addr);
    len = sizeof(*a);
  }
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgid(uid) != 0 || setuid(uid) != 0) _exit(200);
    const int fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0) _exit(201);
    _exit(connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0 ? 0 : errno);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(RouterKernelTest, AnotherUidChangesNothing) {
  Apply(1, AllowA());
  for (uid_t uid : {65534u, 1000u, 12345u}) {
    EXPECT_EQ(ConnectAsUid(uid, testing::kRemoteBV4, 80), EACCES) << uid;
    EXPECT_EQ(ConnectAsUid(uid, testing::kRemoteBV6, 80), EACCES) << uid;
    EXPECT_EQ(ConnectAsUid(uid, testing::kRemoteAV4, 80), 0) << uid;
  }
}

TEST_F(RouterKernelTest, DnsPortsOfAnAllowedHostAreRefused) {
  Apply(1, AllowA());
  for (const char* host : {testing::kRemoteAV4, testing::kRemoteAV6}) {
    EXPECT_EQ(Connect(host, 53), EACCES) << host;
    EXPECT_EQ(Connect(host, 853), EACCES) << host;
    EXPECT_EQ(testing::TryUdp(host, 53, 500ms), EACCES) << host;
    EXPECT_EQ(Connect(host, 80), 0) << host;
    EXPECT_EQ(testing::TryUdp(host, 80, 1000ms), 0) << host;
  }
}

TEST_F(RouterKernelTest, AFailedApplyLeavesTheNamespaceClosedUntilTheNextSucceeds) {
  Apply(1, AllowA());
  ASSERT_EQ(Connect(testing::kRemoteAV4, 80), 0);
  const PolicySet wider = Policy({{"203.0.113.5/32", Action::kAllow},
                                  {"203.0.113.6/32", Action::kAllow},
                                  {"2001:db8:99::5/128", Action::kAllow}});
  engine_->FailRequestForTesting(1);
  absl::StatusOr<ApplyResult> failed = engine_->Apply(2, wider);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), ::testing::HasSubstr("applying generation 2"));
  EXPECT_EQ(Connect(testing::kRemoteAV4, 80), EACCES) << "fail-closed: even the old allow is shut";
  EXPECT_EQ(Connect(testing::kRemoteAV6, 80), EACCES);
  EXPECT_EQ(Connect(testing::kRemoteBV4, 80), EACCES);
  absl::StatusOr<PolicySnapshot> snap = engine_->Read();
  ASSERT_TRUE(snap.ok());
  EXPECT_TRUE(snap->failed_closed);
  EXPECT_EQ(snap->generation, 1u);
  EXPECT_THAT(snap->last_error, ::testing::HasSubstr("refused"));

  ApplyResult ok = Apply(2, wider);
  EXPECT_EQ(ok.generation, 2u);
  EXPECT_EQ(Connect(testing::kRemoteAV4, 80), 0);
  EXPECT_EQ(Connect(testing::kRemoteBV4, 80), 0);
  snap = engine_->Read();
  ASSERT_TRUE(snap.ok());
  EXPECT_FALSE(snap->failed_closed);
}

TEST_F(RouterKernelTest, NoConnectSucceedsAfterTheDenyReturnedUnderAFlood) {
  Apply(1, AllowA());
  std::atomic<bool> stop{false};
  std::atomic<int64_t> latest_success_start{0};
  std::atomic<int> successes{0};
  std::thread flood([&] {
    ASSERT_TRUE(net_->Enter().ok());  // this thread's own sockets must be in R too
    while (!stop.load()) {
      const int64_t started = Clock::now().time_since_epoch().count();
      if (testing::TryConnect(testing::kRemoteAV4, 80, 200ms) == 0) {
        ++successes;
        latest_success_start = started;
      }
    }
    net_->Leave();
  });
  std::this_thread::sleep_for(200ms);
  ASSERT_GT(successes.load(), 0) << "the flood reaches the host while it is allowed";
  Apply(2, Policy({{"2001:db8:99::5/128", Action::kAllow}}));
  const int64_t returned = Clock::now().time_since_epoch().count();
  std::this_thread::sleep_for(300ms);
  stop = true;
  flood.join();
  EXPECT_LT(latest_success_start.load(), returned)
      << "a connect that started after ApplyPolicy returned got through";
}

TEST_F(RouterKernelTest, ReadBackDigestEqualsTheOneComputedFromTheRequest) {
  std::vector<PolicyRoute> routes = ClosedPolicy();
  std::string lines = "prohibit 0.0.0.0/0\n";
  for (int i = 0; i < 1000; ++i) {
    const std::string cidr = absl::StrCat("10.", i / 256, ".", i % 256, ".0/24");
    const Action a = i % 3 == 0 ? Action::kAllow : Action::kProhibit;
    routes.push_back({*ParsePrefix(cidr), a});
    lines += absl::StrCat(ActionName(a), " ", cidr, "\n");
  }
  lines += "prohibit ::/0\n";
  fs::Sha256 sha;
  sha.Update(lines);
  const std::string expected = sha.HexDigest();
  ApplyResult r = Apply(7, *MakePolicySet(routes));
  EXPECT_EQ(r.digest, expected);
  EXPECT_EQ(r.routes, 1002u);
  EXPECT_EQ(r.added, 1000u);
  absl::StatusOr<PolicySnapshot> snap = engine_->Read();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->digest, expected);
  EXPECT_EQ(snap->generation, 7u);
}

TEST_F(RouterKernelTest, TheSameGenerationIsANoOpAndOlderOnesAreRefused) {
  ApplyResult first = Apply(3, AllowA());
  // Changed behind the router's back: a repeat of generation 3 does not
  // touch the kernel, so the change stays (and GetPolicy shows it).
  ASSERT_TRUE(net_->Ip({"route", "del", "throw", "203.0.113.5/32", "table", "100"}).ok());
  ApplyResult again = Apply(3, AllowA());
  EXPECT_EQ(again.digest, first.digest);
  EXPECT_EQ(again.added + again.replaced + again.removed, 0u);
  EXPECT_NE(engine_->Read()->digest, first.digest);
  EXPECT_EQ(engine_->Apply(2, AllowA()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(engine_->Apply(3, Policy({})).status().code(), absl::StatusCode::kFailedPrecondition);
  // The next generation finds the difference in its read-back and repairs
  // it from what the kernel holds.
  ApplyResult next = Apply(4, AllowA());
  EXPECT_EQ(next.digest, first.digest);
  EXPECT_EQ(next.added, 1u);
  EXPECT_EQ(Connect(testing::kRemoteAV4, 80), 0);
}

TEST_F(RouterKernelTest, ChangesAreInPlaceAndRemovalsHappen) {
  Apply(1, Policy({{"203.0.113.0/24", Action::kAllow}, {"203.0.113.6/32", Action::kProhibit}}));
  EXPECT_EQ(Connect(testing::kRemoteAV4, 80), 0);
  EXPECT_EQ(Connect(testing::kRemoteBV4, 80), EACCES);
  ApplyResult r =
      Apply(2, Policy({{"203.0.113.0/24", Action::kProhibit}, {"203.0.113.6/32", Action::kAllow}}));
  EXPECT_EQ(r.replaced, 2u);
  EXPECT_EQ(Connect(testing::kRemoteAV4, 80), EACCES);
  EXPECT_EQ(Connect(testing::kRemoteBV4, 80), 0);
  r = Apply(3, Policy({{"::/0", Action::kAllow}}));
  EXPECT_EQ(r.removed, 2u);
  EXPECT_EQ(r.replaced, 1u);
  EXPECT_EQ(Connect(testing::kRemoteBV4, 80), EACCES);
  EXPECT_EQ(Connect(testing::kRemoteBV6, 80), 0);
}

TEST_F(RouterKernelTest, RulesAreThereOnceWithNoMarkUidOrDeviceSelector) {
  absl::StatusOr<NlSockPtr> sk = ConnectLibnl();
  ASSERT_TRUE(sk.ok());
  ASSERT_TRUE(InstallPolicyRules(sk->get()).ok()) << "installing again keeps one copy";
  absl::StatusOr<std::vector<RuleInfo>> rules = ListRules(sk->get());
  ASSERT_TRUE(rules.ok());
  int dns = 0;
  int lookup = 0;
  for (const RuleInfo& r : *rules) {
    EXPECT_FALSE(r.has_other_selector) << "pref " << r.priority;
    if (r.priority == kDnsRulePriority) ++dns;
    if (r.priority == kPolicyRulePriority) {
      ++lookup;
      EXPECT_EQ(r.table, kPolicyTable);
    }
  }
  EXPECT_EQ(dns, 6);
  EXPECT_EQ(lookup, 2);
}

class LateIpv6GatewayTest : public RouterKernelTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    absl::StatusOr<std::unique_ptr<TestNetwork>> net = TestNetwork::Create();
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = *std::move(net);
    // As with slirp: no IPv6 default route yet when the router starts.
    ASSERT_TRUE(net_->Ip({"-6", "route", "del", "default"}).ok());
    ASSERT_TRUE(net_->Listen({80}, {}).ok());
    ASSERT_TRUE(net_->Enter().ok());
  }
};

// The router advertisement's effect, by hand: a STALE entry with the
// router's link-layer address, then the default route. The watcher pins it.
TEST_F(LateIpv6GatewayTest, AGatewayLearnedAfterStartIsPinned) {
  absl::StatusOr<std::unique_ptr<GatewayWatcher>> watcher = GatewayWatcher::Start();
  ASSERT_TRUE(watcher.ok());
  absl::StatusOr<std::unique_ptr<RtnlSocket>> rtnl = RtnlSocket::Open();
  ASSERT_TRUE(rtnl.ok());
  ASSERT_TRUE(EnforceNeighbourDiscipline(**rtnl, kGatewayResolveTimeout).ok());
  ASSERT_TRUE(net_->Ip({"-6", "neigh", "replace", testing::kGatewayV6, "lladdr",
                        "02:00:00:00:00:01", "nud", "stale", "dev", "va"})
                  .ok());
  ASSERT_TRUE(net_->Ip({"-6", "route", "add", "default", "via", testing::kGatewayV6}).ok());
  const std::string cmd =
      absl::StrCat("ip -n ", net_->router_ns(), " -6 neigh show ", testing::kGatewayV6, " dev va");
  std::string in_router;
  const auto deadline = Clock::now() + 3s;
  while (in_router.find("PERMANENT") == std::string::npos && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    in_router.clear();
    if (FILE* f = popen(cmd.c_str(), "r")) {
      char line[256];
      while (fgets(line, sizeof(line), f) != nullptr) in_router += line;
      pclose(f);
    }
  }
  EXPECT_GT((*watcher)->pinned(), 0);
  EXPECT_THAT(in_router, ::testing::HasSubstr("PERMANENT"));
  EXPECT_THAT(in_router, ::testing::HasSubstr("02:00:00:00:00:01"));
}

// The relay's sink as a test: records queries; the test answers them.
class FakeRelayStream : public DnsRelaySink {
 public:
  bool Send(uint64_t id, const std::string& message, v1::DnsTransport) override {
    std::lock_guard<std::mutex> lock(mu_);
    queries_.emplace_back(id, message);
    return true;
  }
  void Replace() override {}
  std::vector<std::pair<uint64_t, std::string>> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(queries_, {});
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<uint64_t, std::string>> queries_;
};

std::string Query(uint16_t id) {
  std::string q = {
      static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  q += std::string("\x04test\x00\x00\x01\x00\x01", 10);
  return q;
}

// One UDP exchange with the loopback listener; "" on timeout.
std::string AskUdp(const char* address, const std::string& query, int timeout_ms = 2000) {
  sockaddr_storage ss{};
  socklen_t len;
  const bool v6 = std::strchr(address, ':') != nullptr;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(53);
    inet_pton(AF_INET6, address, &a->sin6_addr);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(53);
    inet_pton(AF_INET, address, &a->sin_addr);
    len = sizeof(*a);
  }
  const int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sendto(fd, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&ss), len);
  pollfd p{fd, POLLIN, 0};
  std::string out;
  if (poll(&p, 1, timeout_ms) > 0) {
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) out.assign(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

bool IsServfailFor(const std::string& answer, uint16_t id) {
  return answer.size() >= 12 && static_cast<uint8_t>(answer[0]) == (id >> 8) &&
         static_cast<uint8_t>(answer[1]) == (id & 0xff) && (answer[2] & 0x80) != 0 &&
         (answer[3] & 0x0f) == 2;
}

TEST_F(RouterKernelTest, LoopbackDnsAnswersServfailWithoutARelayAndRelaysWithOne) {
  DnsRelayOptions options;
  options.answer_timeout = 300ms;
  absl::StatusOr<std::unique_ptr<DnsRelay>> relay = DnsRelay::Start(options);
  ASSERT_TRUE(relay.ok()) << relay.status();
  EXPECT_TRUE(IsServfailFor(AskUdp("127.0.0.1", Query(0x1234)), 0x1234));
  EXPECT_TRUE(IsServfailFor(AskUdp("::1", Query(0x4321)), 0x4321));
  EXPECT_EQ(AskUdp("127.0.0.1", std::string(11, 'x'), 300), "") << "short queries are dropped";

  FakeRelayStream stream;
  const uint64_t epoch = (*relay)->Attach(&stream);
  std::thread answerer([&] {
    for (int i = 0; i < 100; ++i) {
      for (auto& [id, q] : stream.Take()) {
        std::string a = q;
        a[2] = static_cast<char>(a[2] | 0x80);
        a += "canned";
        (*relay)->Answer(epoch, id, a);
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  const std::string answer = AskUdp("127.0.0.1", Query(0x7777));
  answerer.join();
  EXPECT_EQ(answer, [] {
    std::string a = Query(0x7777);
    a[2] = static_cast<char>(a[2] | 0x80);
    return a + "canned";
  }());
  // Unanswered: SERVFAIL after the timeout.
  const auto start = Clock::now();
  EXPECT_TRUE(IsServfailFor(AskUdp("127.0.0.1", Query(0x0101)), 0x0101));
  EXPECT_GE(Clock::now() - start, 250ms);
  (*relay)->Detach(epoch);
}

TEST_F(RouterKernelTest, DnsQueriesInFlightAreBounded) {
  DnsRelayOptions options;
  options.max_in_flight = 8;
  options.answer_timeout = 2000ms;
  absl::StatusOr<std::unique_ptr<DnsRelay>> relay = DnsRelay::Start(options);
  ASSERT_TRUE(relay.ok()) << relay.status();
  FakeRelayStream stream;
  (*relay)->Attach(&stream);
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(53);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  for (uint16_t i = 0; i < 20; ++i) {
    const std::string q = Query(i);
    sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  int servfails = 0;
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 500) > 0) {
    char buf[512];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n >= 12 && (buf[3] & 0x0f) == 2) ++servfails;
  }
  close(fd);
  EXPECT_EQ(servfails, 12) << "8 in flight, the other 12 refused at once";
  EXPECT_EQ(stream.Take().size(), 8u);
}

// Answers the first query the stream receives with `hold_ms` (empty
// message), and returns its id; 0 when none came within a second.
uint64_t HoldFirst(DnsRelay& relay, uint64_t epoch, FakeRelayStream& stream, uint32_t hold_ms) {
  for (int i = 0; i < 100; ++i) {
    for (auto& [id, q] : stream.Take()) {
      relay.Answer(epoch, id, "", hold_ms);
      return id;
    }
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

std::string AnswerTo(const std::string& query) {
  std::string a = query;
  a[2] = static_cast<char>(a[2] | 0x80);
  return a + "held";
}

TEST_F(RouterKernelTest, HeldQuerySurvivesPastTheAnswerTimeoutAndGetsItsAnswer) {
  DnsRelayOptions options;
  options.answer_timeout = 200ms;
  absl::StatusOr<std::unique_ptr<DnsRelay>> relay = DnsRelay::Start(options);
  ASSERT_TRUE(relay.ok()) << relay.status();
  FakeRelayStream stream;
  const uint64_t epoch = (*relay)->Attach(&stream);
  std::thread holder([&] {
    const uint64_t id = HoldFirst(**relay, epoch, stream, 5000);
    std::this_thread::sleep_for(700ms);  // well past answer_timeout
    if (id != 0) (*relay)->Answer(epoch, id, AnswerTo(Query(0x2222)));
  });
  const auto start = Clock::now();
  const std::string answer = AskUdp("127.0.0.1", Query(0x2222), 3000);
  holder.join();
  EXPECT_EQ(answer, AnswerTo(Query(0x2222)));
  EXPECT_GE(Clock::now() - start, 600ms);
  (*relay)->Detach(epoch);
}

TEST_F(RouterKernelTest, HoldIsCappedByMaxHold) {
  DnsRelayOptions options;
  options.answer_timeout = 100ms;
  options.max_hold = 600ms;
  absl::StatusOr<std::unique_ptr<DnsRelay>> relay = DnsRelay::Start(options);
  ASSERT_TRUE(relay.ok()) << relay.status();
  FakeRelayStream stream;
  const uint64_t epoch = (*relay)->Attach(&stream);
  std::thread holder([&] { HoldFirst(**relay, epoch, stream, 300000); });
  const auto start = Clock::now();
  const std::string answer = AskUdp("127.0.0.1", Query(0x3333), 3000);
  const auto took = Clock::now() - start;
  holder.join();
  EXPECT_TRUE(IsServfailFor(answer, 0x3333));
  EXPECT_GE(took, 500ms) << "held past answer_timeout";
  EXPECT_LT(took, 2000ms) << "but not past max_hold";
  (*relay)->Detach(epoch);
}

TEST_F(RouterKernelTest, HoldsPastMaxHeldAreRefusedWithServfail) {
  DnsRelayOptions options;
  options.answer_timeout = 3000ms;
  options.max_held = 2;
  absl::StatusOr<std::unique_ptr<DnsRelay>> relay = DnsRelay::Start(options);
  ASSERT_TRUE(relay.ok()) << relay.status();
  FakeRelayStream stream;
  const uint64_t epoch = (*relay)->Attach(&stream);
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(53);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  for (uint16_t i = 0; i < 3; ++i) {
    const std::string q = Query(i);
    sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  std::vector<std::pair<uint64_t, std::string>> queries;
  for (int i = 0; i < 100 && queries.size() < 3; ++i) {
    for (auto& q : stream.Take()) queries.push_back(std::move(q));
    if (queries.size() < 3) std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(queries.size(), 3u);
  for (const auto& [id, q] : queries) (*relay)->Answer(epoch, id, "", 60000);
  int servfails = 0;
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 500) > 0) {
    char buf[512];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n >= 12 && (buf[3] & 0x0f) == 2) ++servfails;
  }
  close(fd);
  EXPECT_EQ(servfails, 1) << "two held, the third refused at once";
  (*relay)->Detach(epoch);
}

TEST_F(RouterKernelTest, HeldTcpQueryKeepsItsConnectionFromIdlingOut) {
  DnsRelayOptions options;
  options.answer_timeout = 200ms;
  options.tcp_idle_timeout = 200ms;
  absl::StatusOr<std::unique_ptr<DnsRelay>> relay = DnsRelay::Start(options);
  ASSERT_TRUE(relay.ok()) << relay.status();
  FakeRelayStream stream;
  const uint64_t epoch = (*relay)->Attach(&stream);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(53);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << std::strerror(errno);
  const std::string q = Query(0x4444);
  std::string framed = {static_cast<char>(q.size() >> 8), static_cast<char>(q.size() & 0xff)};
  framed += q;
  ASSERT_EQ(write(fd, framed.data(), framed.size()), static_cast<ssize_t>(framed.size()));
  const uint64_t id = HoldFirst(**relay, epoch, stream, 5000);
  ASSERT_NE(id, 0u);
  std::this_thread::sleep_for(800ms);  // four idle timeouts
  (*relay)->Answer(epoch, id, AnswerTo(q));
  std::string got;
  pollfd p{fd, POLLIN, 0};
  while (got.size() < 2 + AnswerTo(q).size() && poll(&p, 1, 2000) > 0) {
    char buf[512];
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  ASSERT_GE(got.size(), 2u) << "the connection was closed while its query was held";
  EXPECT_EQ(got.substr(2), AnswerTo(q));
  (*relay)->Detach(epoch);
}

// The sandbox's path to the egress proxy, in the router's namespace: the
// listeners on 127.0.80.1, the channel, and the router's connects judged
// by the session's routes.
class EgressKernelTest : public RouterKernelTest {
 protected:
  void SetUp() override {
    RouterKernelTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    char tmpl[] = "/tmp/lzek.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    EgressListenerOptions o;
    o.socket_path = dir_ + "/egress.sock";
    absl::StatusOr<std::unique_ptr<EgressListener>> l = EgressListener::Start(o);
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = *std::move(l);
  }
  void TearDown() override {
    channel_.reset();
    listener_.reset();
    if (!dir_.empty()) rmdir(dir_.c_str());
    RouterKernelTest::TearDown();
  }

  void AttachProxy() {
    egress::EgressChannel::Options o;
    o.on_accepted = [this](uint64_t, uint16_t port, fs::UniqueFd fd) {
      std::lock_guard<std::mutex> lock(mu_);
      accepted_.emplace_back(port, std::move(fd));
    };
    absl::StatusOr<std::unique_ptr<egress::EgressChannel>> ch =
        egress::EgressChannel::Connect(dir_ + "/egress.sock", o);
    ASSERT_TRUE(ch.ok()) << ch.status();
    channel_ = *std::move(ch);
    for (int i = 0; i < 500 && !listener_->counters().attached; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(listener_->counters().attached);
  }
  std::pair<uint16_t, fs::UniqueFd> NextAccepted() {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!accepted_.empty()) {
          auto out = std::move(accepted_.front());
          accepted_.pop_front();
          return out;
        }
      }
      std::this_thread::sleep_for(10ms);
    }
    return {0, fs::UniqueFd()};
  }
  int ConnectError(const char* address, uint16_t port) {
    absl::StatusOr<egress::EgressChannel::Upstream> r = channel_->Connect(address, port);
    EXPECT_TRUE(r.ok()) << address << ": " << r.status();
    if (!r.ok()) return -1;
    EXPECT_EQ(r->fd.valid(), r->error == 0) << address;
    return r->error;
  }

  std::string dir_;
  std::unique_ptr<EgressListener> listener_;
  std::unique_ptr<egress::EgressChannel> channel_;
  std::mutex mu_;
  std::deque<std::pair<uint16_t, fs::UniqueFd>> accepted_;
};

// A client in the namespace connected to the proxy's address.
fs::UniqueFd SandboxClient(uint16_t port) {
  fs::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, egress::kProxyAddress, &a.sin_addr);
  timeval tv{5, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0)
      << std::strerror(errno);
  return fd;
}

// What one read gives: the bytes, "<eof>" or the errno.
std::string ReadOnce(int fd) {
  char buf[256];
  const ssize_t n = recv(fd, buf, sizeof(buf), 0);
  if (n < 0) return std::strerror(errno);
  if (n == 0) return "<eof>";
  return std::string(buf, static_cast<size_t>(n));
}

TEST_F(EgressKernelTest, WithoutAProxyTheSandboxsConnectionIsReset) {
  fs::UniqueFd c = SandboxClient(egress::kHttpsPort);
  EXPECT_EQ(ReadOnce(c.get()), std::strerror(ECONNRESET));
  fs::UniqueFd h = SandboxClient(egress::kHttpPort);
  EXPECT_EQ(ReadOnce(h.get()), std::strerror(ECONNRESET));
}

TEST_F(EgressKernelTest, TheProxyGetsTheSandboxsConnectionAndExchangesBytes) {
  AttachProxy();
  for (uint16_t port : {egress::kHttpsPort, egress::kHttpPort}) {
    fs::UniqueFd c = SandboxClient(port);
    auto [local_port, fd] = NextAccepted();
    ASSERT_TRUE(fd.valid()) << port;
    EXPECT_EQ(local_port, port);
    ASSERT_EQ(send(c.get(), "GET /", 5, MSG_NOSIGNAL), 5);
    EXPECT_EQ(ReadOnce(fd.get()), "GET /");
    ASSERT_EQ(send(fd.get(), "200", 3, MSG_NOSIGNAL), 3);
    EXPECT_EQ(ReadOnce(c.get()), "200");
  }
  // The proxy is gone: the next connection fails closed.
  channel_.reset();
  for (int i = 0; i < 500 && listener_->counters().attached; ++i) std::this_thread::sleep_for(10ms);
  fs::UniqueFd late = SandboxClient(egress::kHttpsPort);
  EXPECT_EQ(ReadOnce(late.get()), std::strerror(ECONNRESET));
}

TEST_F(EgressKernelTest, TheRoutersConnectsAreJudgedByTheSessionsRoutes) {
  Apply(1, AllowA());
  AttachProxy();
  for (const char* allowed : {testing::kRemoteAV4, testing::kRemoteAV6}) {
    absl::StatusOr<egress::EgressChannel::Upstream> r = channel_->Connect(allowed, 80);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->error, 0) << allowed << ": " << std::strerror(r->error);
    ASSERT_TRUE(r->fd.valid());
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    ASSERT_EQ(getpeername(r->fd.get(), reinterpret_cast<sockaddr*>(&peer), &len), 0) << allowed;
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr =
        peer.ss_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&peer)->sin_addr)
            : &reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr;
    inet_ntop(peer.ss_family, addr, text, sizeof(text));
    EXPECT_EQ(std::string(text), allowed);
    // The test host accepts and closes: the socket is a working connection.
    EXPECT_EQ(ReadOnce(r->fd.get()), "<eof>") << allowed;
  }
  EXPECT_EQ(ConnectError(testing::kRemoteBV4, 80), EACCES) << "a prohibit route";
  EXPECT_EQ(ConnectError(testing::kRemoteBV6, 80), EACCES) << "a prohibit route";
  EXPECT_EQ(ConnectError(testing::kGatewayV4, 80), EACCES);
  EXPECT_EQ(ConnectError("127.0.0.1", 80), EPERM) << "loopback, refused without trying";
  EXPECT_EQ(ConnectError(egress::kProxyAddress, 443), EPERM);
  EXPECT_EQ(ConnectError(testing::kRouterV4, 80), EPERM) << "the namespace's own address";
  EXPECT_EQ(ConnectError(testing::kRouterV6, 80), EPERM) << "the namespace's own address";
  EXPECT_EQ(ConnectError(testing::kRemoteAV4, 0), EINVAL);
  for (int i = 0; i < 500 && listener_->counters().connects_ok != 2u; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(listener_->counters().connects_ok, 2u);
}

}  // namespace
}  // namespace lazaret::netrouter
