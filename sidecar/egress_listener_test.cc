// The egress listener with real sockets in the test's own namespace: TCP
// clients on a loopback address, the listener, and a stand-in proxy that
// is the real EgressChannel (or a raw SEQPACKET peer where a test sends
// what EgressChannel never would). Destinations that need routes are in
// netrouter_kernel_test.cc.
#include "sidecar/egress_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sidecar/netrouter.h"
#include "tests/support/test_support.h"

namespace lazaret::netrouter {
namespace {

using namespace std::chrono_literals;

// A TCP client of the listener; -1 when the connect failed.
fs::UniqueFd ConnectTcp(const std::string& address, uint16_t port) {
  fs::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  timeval tv{5, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return fs::UniqueFd();
  return fd;
}

// What a read on the client gives: the bytes, or "<errno text>", or "<eof>".
std::string ReadSome(int fd) {
  char buf[256];
  const ssize_t n = recv(fd, buf, sizeof(buf), 0);
  if (n < 0) return absl::StrCat("<", std::strerror(errno), ">");
  if (n == 0) return "<eof>";
  return std::string(buf, static_cast<size_t>(n));
}

// Waits until `pred` holds (up to 5 s).
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

// The proxy's side for tests: an EgressChannel whose accepted connections
// are kept in a queue.
class FakeProxy {
 public:
  static std::unique_ptr<FakeProxy> Attach(const std::string& path) {
    auto p = std::make_unique<FakeProxy>();
    egress::EgressChannel::Options o;
    o.on_accepted = [raw = p.get()](uint64_t, uint16_t port, fs::UniqueFd fd) {
      std::lock_guard<std::mutex> lock(raw->mu_);
      raw->accepted_.push_back({port, std::move(fd)});
    };
    o.connect_timeout = 12s;
    absl::StatusOr<std::unique_ptr<egress::EgressChannel>> ch =
        egress::EgressChannel::Connect(path, o);
    EXPECT_TRUE(ch.ok()) << ch.status();
    if (!ch.ok()) return nullptr;
    p->channel_ = *std::move(ch);
    return p;
  }
  // The next connection the router handed over (waits up to 5 s).
  std::pair<uint16_t, fs::UniqueFd> Next() {
    std::pair<uint16_t, fs::UniqueFd> out{0, fs::UniqueFd()};
    Eventually([&] {
      std::lock_guard<std::mutex> lock(mu_);
      if (accepted_.empty()) return false;
      out = std::move(accepted_.front());
      accepted_.pop_front();
      return true;
    });
    return out;
  }
  egress::EgressChannel& channel() { return *channel_; }

 private:
  std::mutex mu_;
  std::deque<std::pair<uint16_t, fs::UniqueFd>> accepted_;
  std::unique_ptr<egress::EgressChannel> channel_;
};

class EgressListenerTest : public ::testing::Test {
 protected:
  void StartListener(uid_t peer_uid = static_cast<uid_t>(-1)) {
    EgressListenerOptions o;
    o.socket_path = dir_.path() + "/egress.sock";
    o.address = "127.0.0.1";
    o.https_port = 0;
    o.http_port = 0;
    o.peer_uid = peer_uid;
    o.max_queued = 4;
    absl::StatusOr<std::unique_ptr<EgressListener>> l = EgressListener::Start(o);
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = *std::move(l);
  }
  std::string socket_path() const { return dir_.path() + "/egress.sock"; }
  bool Attached() {
    return Eventually([&] { return listener_->counters().attached; });
  }

  test::TempDir dir_{"lzel"};
  std::unique_ptr<EgressListener> listener_;
};

TEST_F(EgressListenerTest, WithoutAProxyASandboxConnectionIsResetAtOnce) {
  StartListener();
  fs::UniqueFd c = ConnectTcp("127.0.0.1", listener_->https_port());
  ASSERT_TRUE(c.valid());
  EXPECT_EQ(ReadSome(c.get()), absl::StrCat("<", std::strerror(ECONNRESET), ">"));
  EXPECT_TRUE(Eventually([&] { return listener_->counters().reset_no_proxy == 1u; }));
}

TEST_F(EgressListenerTest, TheProxyGetsEachConnectionWithItsPortAndTalksToTheClient) {
  StartListener();
  std::unique_ptr<FakeProxy> proxy = FakeProxy::Attach(socket_path());
  ASSERT_NE(proxy, nullptr);
  ASSERT_TRUE(Attached());
  for (uint16_t port : {listener_->https_port(), listener_->http_port()}) {
    fs::UniqueFd c = ConnectTcp("127.0.0.1", port);
    ASSERT_TRUE(c.valid());
    auto [local_port, fd] = proxy->Next();
    ASSERT_TRUE(fd.valid());
    EXPECT_EQ(local_port, port);
    ASSERT_EQ(send(c.get(), "hello", 5, MSG_NOSIGNAL), 5);
    EXPECT_EQ(ReadSome(fd.get()), "hello");
    ASSERT_EQ(send(fd.get(), "world", 5, MSG_NOSIGNAL), 5);
    EXPECT_EQ(ReadSome(c.get()), "world");
    // The router kept no copy: closing the proxy's ends the connection.
    fd.reset();
    EXPECT_EQ(ReadSome(c.get()), "<eof>");
  }
  EXPECT_TRUE(Eventually([&] { return listener_->counters().handed == 2u; }));
}

TEST_F(EgressListenerTest, ASecondLiveProxyIsRefusedAndADeadOneReplaced) {
  StartListener();
  std::unique_ptr<FakeProxy> first = FakeProxy::Attach(socket_path());
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(Attached());
  std::unique_ptr<FakeProxy> second = FakeProxy::Attach(socket_path());
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(Eventually([&] { return second->channel().closed(); }));
  EXPECT_TRUE(Eventually([&] { return listener_->counters().peers_refused == 1u; }));
  EXPECT_FALSE(first->channel().closed());

  first.reset();
  ASSERT_TRUE(Eventually([&] { return !listener_->counters().attached; }));
  std::unique_ptr<FakeProxy> third = FakeProxy::Attach(socket_path());
  ASSERT_NE(third, nullptr);
  ASSERT_TRUE(Attached());
  fs::UniqueFd c = ConnectTcp("127.0.0.1", listener_->https_port());
  auto [port, fd] = third->Next();
  EXPECT_TRUE(fd.valid());
  EXPECT_FALSE(third->channel().closed());
}

TEST_F(EgressListenerTest, AProxyOfAnotherUidIsRefused) {
  StartListener(getuid() + 1);
  egress::EgressChannel::Options o;
  absl::StatusOr<std::unique_ptr<egress::EgressChannel>> ch =
      egress::EgressChannel::Connect(socket_path(), o);
  ASSERT_TRUE(ch.ok()) << ch.status();
  ASSERT_TRUE(Eventually([&] { return (*ch)->closed(); }));
  EXPECT_TRUE(Eventually([&] { return listener_->counters().peers_refused == 1u; }));
  EXPECT_FALSE(listener_->counters().attached);
  fs::UniqueFd c = ConnectTcp("127.0.0.1", listener_->https_port());
  EXPECT_EQ(ReadSome(c.get()), absl::StrCat("<", std::strerror(ECONNRESET), ">"));
}

TEST_F(EgressListenerTest, ForbiddenDestinationsAreRefusedWithoutTrying) {
  StartListener();
  std::unique_ptr<FakeProxy> proxy = FakeProxy::Attach(socket_path());
  ASSERT_NE(proxy, nullptr);
  for (const char* address : {"127.0.0.1", "127.9.9.9", "0.0.0.0", "::", "::1", "224.0.0.1",
                              "ff02::1", "::ffff:203.0.113.5", "255.255.255.255"}) {
    absl::StatusOr<egress::EgressChannel::Upstream> r = proxy->channel().Connect(address, 443);
    ASSERT_TRUE(r.ok()) << address << ": " << r.status();
    EXPECT_EQ(r->error, EPERM) << address;
    EXPECT_FALSE(r->fd.valid()) << address;
  }
  absl::StatusOr<egress::EgressChannel::Upstream> r = proxy->channel().Connect("203.0.113.5", 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->error, EINVAL);
  // The counters are published after the loop's turn that answered.
  EXPECT_TRUE(Eventually([&] { return listener_->counters().connects_refused == 10u; }));
}

TEST(RefusedDestinationTest, OwnAddressesAreRefused) {
  const uint8_t loopback[4] = {127, 0, 0, 1};
  EXPECT_TRUE(RefusedDestination(AF_INET, loopback));
  const uint8_t doc[4] = {203, 0, 113, 77};
  EXPECT_FALSE(RefusedDestination(AF_INET, doc)) << "not an address of this machine";
  EXPECT_TRUE(RefusedDestination(AF_UNIX, doc));
}

TEST_F(EgressListenerTest, AProxyThatBreaksTheProtocolIsDetached) {
  StartListener();
  fs::UniqueFd raw(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, socket_path().data(), socket_path().size());
  ASSERT_EQ(connect(raw.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_TRUE(Attached());
  // ACCEPTED is the router's to send.
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  fs::UniqueFd x(fds[0]), y(fds[1]);
  ASSERT_TRUE(egress::SendWithFd(raw.get(), egress::AcceptedMessage(1, 443), x.get()).ok());
  ASSERT_TRUE(Eventually([&] { return !listener_->counters().attached; }));
  char c;
  EXPECT_EQ(recv(raw.get(), &c, 1, 0), 0) << "the router closed the channel";
}

TEST_F(EgressListenerTest, AProxyThatDoesNotReadGetsItsSandboxConnectionsReset) {
  StartListener();
  fs::UniqueFd raw(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  int small = 1;  // the smallest buffer the kernel allows
  setsockopt(raw.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, socket_path().data(), socket_path().size());
  ASSERT_EQ(connect(raw.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_TRUE(Attached());
  std::vector<fs::UniqueFd> clients;
  for (int i = 0; i < 3000; ++i) {
    clients.push_back(ConnectTcp("127.0.0.1", listener_->https_port()));
    if (listener_->counters().reset_queue_full > 0) break;
  }
  ASSERT_TRUE(Eventually([&] { return listener_->counters().reset_queue_full > 0; }))
      << "handed " << listener_->counters().handed;
  // The reset ones read ECONNRESET; the handed ones wait for the proxy.
  std::this_thread::sleep_for(100ms);
  uint64_t reset = 0;
  for (const fs::UniqueFd& c : clients) {
    char b;
    if (recv(c.get(), &b, 1, MSG_DONTWAIT) < 0 && errno == ECONNRESET) ++reset;
  }
  EXPECT_GT(reset, 0u);
  EXPECT_EQ(reset, listener_->counters().reset_queue_full);
}

TEST_F(EgressListenerTest, BadOptionsAreRefused) {
  for (const char* bad : {"", "relative/egress.sock", "/a/../egress.sock"}) {
    EgressListenerOptions o;
    o.socket_path = bad;
    o.address = "127.0.0.1";
    o.https_port = o.http_port = 0;
    EXPECT_FALSE(EgressListener::Start(o).ok()) << bad;
  }
  EgressListenerOptions o;
  o.socket_path = socket_path();
  o.address = "not-an-address";
  EXPECT_FALSE(EgressListener::Start(o).ok());
}

TEST(TakeRouterFlagsTest, TakesTheEgressSocket) {
  std::string a0 = "lazaret-netrouter", a1 = "--egress-socket=/run/lazaret/router/egress.sock",
              a2 = "--escalation-socket=/run/b/escalate.sock", a3 = "--socket=/x/router.sock";
  std::vector<char*> args = {a0.data(), a1.data(), a2.data(), a3.data()};
  absl::StatusOr<RouterOptions> o = TakeRouterFlags(&args);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->egress_socket, "/run/lazaret/router/egress.sock");
  EXPECT_EQ(o->escalation_socket, "/run/b/escalate.sock");
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(std::string(args[1]), a3);
  std::string empty = "--egress-socket=";
  std::vector<char*> bad = {a0.data(), empty.data()};
  EXPECT_FALSE(TakeRouterFlags(&bad).ok());
  std::vector<char*> twice = {a0.data(), a1.data(), a1.data()};
  EXPECT_FALSE(TakeRouterFlags(&twice).ok());
}

}  // namespace
}  // namespace lazaret::netrouter
