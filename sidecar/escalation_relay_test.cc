// The escalation relay with real sockets: a TCP client on the loopback, the
// relay, and a stand-in broker on a Unix socket in a scratch directory.
#include "sidecar/escalation_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/netrouter.h"

namespace lazaret::netrouter {
namespace {

using namespace std::chrono_literals;

// A stand-in broker: listens on `path` and runs `handler` on its own thread
// for each connection it accepts.
class FakeBroker {
 public:
  using Handler = std::function<void(int fd)>;
  FakeBroker(const std::string& path, Handler handler) : path_(path), handler_(std::move(handler)) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << std::strerror(errno);
    EXPECT_EQ(listen(fd_, 64), 0);
    acceptor_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 20) != 1) continue;
        const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        std::lock_guard<std::mutex> lock(mu_);
        workers_.emplace_back([this, c] {
          handler_(c);
          close(c);
        });
      }
    });
  }
  ~FakeBroker() {
    stop_ = true;
    acceptor_.join();
    close(fd_);
    unlink(path_.c_str());
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : workers_) t.join();
  }

 private:
  std::string path_;
  Handler handler_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

// Sets `flag` when it goes out of scope: declared after a FakeBroker whose
// handlers wait for `flag`, it lets them end before the broker joins them,
// also when an assertion returns early.
struct Release {
  std::atomic<bool>& flag;
  ~Release() { flag = true; }
};

// Reads until EOF or an error; `error` gets the errno of an error (0 at EOF).
std::string ReadAll(int fd, int* error = nullptr) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (error != nullptr) *error = n < 0 ? errno : 0;
    return out;
  }
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{10, 0};  // no test hangs on a relay that never answers
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

std::string RandomBytes(size_t n) {
  std::mt19937 rng(42);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

class EscalationRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-relay-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/escalate.sock";
  }
  void TearDown() override {
    relay_.reset();
    unlink(socket_.c_str());
    rmdir(dir_.c_str());
  }
  void StartRelay(EscalationRelayOptions o = {}) {
    o.broker_socket = socket_;
    o.port = 0;
    absl::StatusOr<std::unique_ptr<EscalationRelay>> r = EscalationRelay::Start(o);
    ASSERT_TRUE(r.ok()) << r.status();
    relay_ = std::move(*r);
  }
  // Waits until the relay's counters satisfy `done` (at most 5 s).
  bool WaitFor(const std::function<bool(const EscalationRelay::Counters&)>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done(relay_->counters())) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  std::string dir_;
  std::string socket_;
  std::unique_ptr<EscalationRelay> relay_;
};

TEST_F(EscalationRelayTest, PassesBytesBothWaysUnchanged) {
  FakeBroker broker(socket_, [](int fd) {
    char buf[8192];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) return;
      if (!WriteAll(fd, std::string(buf, static_cast<size_t>(n)))) return;
    }
  });
  StartRelay();
  const int c = Connect(relay_->port());
  ASSERT_GE(c, 0);
  const std::string data = RandomBytes(3 << 20);
  std::thread writer([&] { EXPECT_TRUE(WriteAll(c, data)); });
  std::string echoed;
  char buf[65536];
  while (echoed.size() < data.size()) {
    const ssize_t n = read(c, buf, sizeof(buf));
    if (n <= 0) break;
    echoed.append(buf, static_cast<size_t>(n));
  }
  writer.join();
  close(c);
  EXPECT_EQ(echoed.size(), data.size());
  EXPECT_TRUE(echoed == data) << "the bytes changed on the way";
}

// The broker's SO_PEERCRED check sees the relay (the sidecar's process, whose
// uid is the broker's own), never anything of the sandbox.
TEST_F(EscalationRelayTest, BrokerSeesTheRelaysOwnCredentials) {
  std::atomic<uid_t> uid{~0u};
  std::atomic<pid_t> pid{0};
  FakeBroker broker(socket_, [&](int fd) {
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      uid = cred.uid;
      pid = cred.pid;
    }
    WriteAll(fd, "ok");
  });
  StartRelay();
  const int c = Connect(relay_->port());
  ASSERT_GE(c, 0);
  EXPECT_EQ(ReadAll(c), "ok");
  close(c);
  EXPECT_EQ(uid.load(), geteuid());
  EXPECT_EQ(pid.load(), getpid());
}

TEST_F(EscalationRelayTest, UnreachableBrokerResetsTheClientAtOnce) {
  StartRelay();
  const auto start = std::chrono::steady_clock::now();
  const int c = Connect(relay_->port());
  ASSERT_GE(c, 0);
  int error = -1;
  EXPECT_EQ(ReadAll(c, &error), "");
  EXPECT_EQ(error, ECONNRESET) << "a refusal before the broker spoke is a reset";
  close(c);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_TRUE(WaitFor([](const auto& k) { return k.unreachable == 1 && k.open == 0; }));
}

// A restarted broker binds the same path again; the relay connects per
// connection, so the next one reaches it.
TEST_F(EscalationRelayTest, RestartedBrokerIsReachedByTheNextConnection) {
  StartRelay();
  {
    FakeBroker first(socket_, [](int fd) { WriteAll(fd, "first"); });
    const int c = Connect(relay_->port());
    EXPECT_EQ(ReadAll(c), "first");
    close(c);
  }
  const int gone = Connect(relay_->port());
  EXPECT_EQ(ReadAll(gone), "");
  close(gone);
  FakeBroker second(socket_, [](int fd) { WriteAll(fd, "second"); });
  const int c = Connect(relay_->port());
  EXPECT_EQ(ReadAll(c), "second");
  close(c);
}

TEST_F(EscalationRelayTest, ConnectionsPastTheLimitAreRefused) {
  std::atomic<bool> release{false};
  std::atomic<int> served{0};
  FakeBroker broker(socket_, [&](int fd) {
    ++served;
    WriteAll(fd, "h");
    while (!release) std::this_thread::sleep_for(5ms);
  });
  Release guard{release};
  EscalationRelayOptions o;
  o.max_connections = 3;
  StartRelay(o);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {
    const int c = Connect(relay_->port());
    ASSERT_GE(c, 0);
    char b = 0;
    ASSERT_EQ(read(c, &b, 1), 1);
    EXPECT_EQ(b, 'h');
    held.push_back(c);
  }
  const int over = Connect(relay_->port());
  ASSERT_GE(over, 0);
  EXPECT_EQ(ReadAll(over), "") << "a fourth connection reached the broker";
  close(over);
  EXPECT_EQ(served.load(), 3);
  EXPECT_TRUE(WaitFor([](const auto& k) { return k.over_limit == 1 && k.open == 3; }));
  // A slot that frees up is used again.
  close(held.back());
  held.pop_back();
  ASSERT_TRUE(WaitFor([](const auto& k) { return k.open == 2; }));
  const int again = Connect(relay_->port());
  char b = 0;
  EXPECT_EQ(read(again, &b, 1), 1);
  held.push_back(again);
  for (int c : held) close(c);
}

TEST_F(EscalationRelayTest, BrokerThatNeverAnswersIsCutAfterTheFirstAnswerTimeout) {
  std::atomic<bool> release{false};
  FakeBroker broker(socket_, [&](int) {
    while (!release) std::this_thread::sleep_for(5ms);
  });
  Release guard{release};
  EscalationRelayOptions o;
  o.first_answer_timeout = 300ms;
  StartRelay(o);
  const auto start = std::chrono::steady_clock::now();
  const int c = Connect(relay_->port());
  ASSERT_GE(c, 0);
  ASSERT_TRUE(WriteAll(c, "hello"));
  EXPECT_EQ(ReadAll(c), "");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 3s);
  close(c);
  EXPECT_TRUE(WaitFor([](const auto& k) { return k.first_answer_timeouts == 1 && k.open == 0; }));
}

// Once the broker has spoken, its own deadlines govern: a wait for a human
// may be long and silent.
TEST_F(EscalationRelayTest, SilenceAfterTheBrokerSpokeIsNotCut) {
  FakeBroker broker(socket_, [](int fd) {
    WriteAll(fd, "pending;");
    std::this_thread::sleep_for(900ms);
    WriteAll(fd, "result");
  });
  EscalationRelayOptions o;
  o.first_answer_timeout = 200ms;
  StartRelay(o);
  const int c = Connect(relay_->port());
  EXPECT_EQ(ReadAll(c), "pending;result");
  close(c);
}

// The broker writes its last frame and closes at once: everything it wrote
// still reaches the client, then the end.
TEST_F(EscalationRelayTest, BrokerCloseIsPassedOnAfterItsLastByte) {
  const std::string answer = RandomBytes(700 * 1024);
  FakeBroker broker(socket_, [&](int fd) { WriteAll(fd, answer); });
  StartRelay();
  const int c = Connect(relay_->port());
  std::this_thread::sleep_for(200ms);  // the broker is long gone by the first read
  int error = -1;
  const std::string got = ReadAll(c, &error);
  EXPECT_EQ(error, 0);
  EXPECT_EQ(got.size(), answer.size());
  EXPECT_TRUE(got == answer);
  close(c);
  EXPECT_TRUE(WaitFor([](const auto& k) { return k.open == 0; }));
}

// A client that leaves frees its slot at once, whatever the broker does,
// after what it sent has been passed on; the broker sees its end close.
TEST_F(EscalationRelayTest, ClientThatLeavesFreesItsSlotAfterItsLastByte) {
  std::atomic<bool> broker_saw_eof{false};
  std::string request;
  FakeBroker broker(socket_, [&](int fd) {
    WriteAll(fd, "h");
    request = ReadAll(fd);
    broker_saw_eof = true;
  });
  StartRelay();
  const int c = Connect(relay_->port());
  char b = 0;
  ASSERT_EQ(read(c, &b, 1), 1);
  ASSERT_TRUE(WriteAll(c, "request"));
  close(c);
  EXPECT_TRUE(WaitFor([](const auto& k) { return k.open == 0; }));
  for (int i = 0; i < 500 && !broker_saw_eof; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(broker_saw_eof.load());
  EXPECT_EQ(request, "request");
}

// A client that writes while the broker reads nothing is pushed back: the
// relay holds a bounded buffer and stops reading, so the client's writes
// block long before its data could fill the sidecar's memory.
TEST_F(EscalationRelayTest, ClientThatOutpacesTheBrokerIsPushedBack) {
  std::atomic<bool> release{false};
  FakeBroker broker(socket_, [&](int fd) {
    WriteAll(fd, "h");
    while (!release) std::this_thread::sleep_for(5ms);
  });
  Release guard{release};
  StartRelay();
  const int c = Connect(relay_->port());
  char b = 0;
  ASSERT_EQ(read(c, &b, 1), 1);
  fcntl(c, F_SETFL, O_NONBLOCK);
  const std::string chunk(64 * 1024, 'x');
  size_t sent = 0;
  auto last_progress = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - last_progress < 500ms && sent < (256u << 20)) {
    const ssize_t n = send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      last_progress = std::chrono::steady_clock::now();
    } else {
      std::this_thread::sleep_for(5ms);
    }
  }
  // Kernel socket buffers on both hops plus the relay's 64 KiB.
  EXPECT_LT(sent, 64u << 20) << "the relay kept reading a client its broker does not read";
  close(c);
}

// Nothing can bind the relay's port beside it, on its address or on the
// wildcard one: the sandbox cannot take the endpoint over.
TEST_F(EscalationRelayTest, NobodyBindsThePortBesideIt) {
  StartRelay();
  for (const char* address : {"127.0.0.1", "0.0.0.0"}) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(relay_->port());
    inet_pton(AF_INET, address, &a.sin_addr);
    EXPECT_NE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << address;
    EXPECT_EQ(errno, EADDRINUSE) << address;
    close(fd);
  }
  const int fd6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd6 >= 0) {
    int zero = 0;
    setsockopt(fd6, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(relay_->port());
    a.sin6_addr = in6addr_any;
    EXPECT_NE(bind(fd6, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << "[::] dual-stack";
    close(fd6);
  }
}

TEST_F(EscalationRelayTest, RefusesABrokerSocketThatIsNotACleanAbsolutePath) {
  for (const std::string& bad :
       {std::string("relative/escalate.sock"), std::string("/run/lazaret/../escalate.sock"),
        std::string(""), "/" + std::string(120, 'a')}) {
    EscalationRelayOptions o;
    o.broker_socket = bad;
    o.port = 0;
    EXPECT_FALSE(EscalationRelay::Start(o).ok()) << bad;
  }
}

// The router's own flag is taken out before the service flags are parsed;
// without it there is no relay.
TEST(TakeRouterFlagsTest, TakesTheEscalationSocketAndLeavesTheRest) {
  std::string a0 = "lazaret-netrouter", a1 = "--runtime-dir=/run/lazaret/router",
              a2 = "--escalation-socket=/run/lazaret/broker/escalate.sock",
              a3 = "--socket=/run/lazaret/router/router.sock";
  std::vector<char*> args = {a0.data(), a1.data(), a2.data(), a3.data()};
  absl::StatusOr<RouterOptions> o = TakeRouterFlags(&args);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->escalation_socket, "/run/lazaret/broker/escalate.sock");
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(std::string(args[1]), a1);
  EXPECT_EQ(std::string(args[2]), a3);

  std::vector<char*> none = {a0.data(), a1.data()};
  o = TakeRouterFlags(&none);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->escalation_socket, "");
  EXPECT_EQ(none.size(), 2u);

  std::string empty = "--escalation-socket=";
  std::vector<char*> bad = {a0.data(), empty.data()};
  EXPECT_FALSE(TakeRouterFlags(&bad).ok());
  std::vector<char*> twice = {a0.data(), a2.data(), a2.data()};
  EXPECT_FALSE(TakeRouterFlags(&twice).ok());
}

}  // namespace
}  // namespace lazaret::netrouter
