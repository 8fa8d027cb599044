// The trace sink against a fake Sentry: a client that speaks runsc's remote
// sink protocol over a real SOCK_SEQPACKET socket with crafted messages.
#include "services/netpolicyd/trace_sink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "pkg/sentry/seccheck/points/common.pb.h"
#include "pkg/sentry/seccheck/points/syscall.pb.h"
#include "services/netpolicyd/trace_message.h"
#include "tests/support/test_support.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace cfg = ::lazaret::config::v1;

constexpr auto kWait = std::chrono::seconds(5);

std::string Header(uint16_t type, uint32_t dropped, uint16_t header_size = 8) {
  std::string h(8, '\0');
  std::memcpy(h.data(), &header_size, 2);
  std::memcpy(h.data() + 2, &type, 2);
  std::memcpy(h.data() + 4, &dropped, 4);
  return h;
}

std::string Sockaddr4(const char* ip, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, ip, &sa.sin_addr);
  return std::string(reinterpret_cast<const char*>(&sa), sizeof(sa));
}

std::string Sockaddr6(const char* ip, uint16_t port) {
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &sa.sin6_addr);
  return std::string(reinterpret_cast<const char*>(&sa), sizeof(sa));
}

std::string ConnectMessage(const std::string& sockaddr, int64_t err, const std::string& process,
                           uint32_t dropped = 0) {
  gvisor::syscall::Connect c;
  c.mutable_context_data()->set_process_name(process);
  c.mutable_context_data()->set_time_ns(1'700'000'000'000'000'000);
  c.mutable_exit()->set_errorno(err);
  c.mutable_exit()->set_result(err == 0 ? 0 : -1);
  c.set_address(sockaddr);
  c.set_fd(3);
  return Header(kTraceMessageConnect, dropped) + c.SerializeAsString();
}

// The Sentry's side of the socket.
class FakeSentry {
 public:
  explicit FakeSentry(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~FakeSentry() { close(fd_); }
  bool connected() const { return connected_; }
  bool Send(const std::string& m) {
    return send(fd_, m.data(), m.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(m.size());
  }
  // Sends the handshake and reads the sink's answer: its version, or -1.
  int Handshake() {
    gvisor::common::Handshake hs;
    hs.set_version(1);
    if (!Send(hs.SerializeAsString())) return -1;
    char buf[1024];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) return -1;
    gvisor::common::Handshake reply;
    if (!reply.ParseFromArray(buf, static_cast<int>(n))) return -1;
    return static_cast<int>(reply.version());
  }
  // True when the sink closed its end (recv sees EOF).
  bool ClosedByPeer() {
    char buf[16];
    return recv(fd_, buf, sizeof(buf), 0) == 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class TraceSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = tmp_.path() + "/trace.sock";
    cfg::CidrEntry* allow = in_.network.add_allow();
    allow->mutable_cidr()->set_prefix("198.51.100.0/24");
    allow->mutable_source()->set_key_path("profiles.x.allow_egress");
    cfg::CidrEntry* deny = in_.network.add_deny();
    deny->mutable_cidr()->set_prefix("10.0.0.0/8");
    deny->mutable_source()->set_key_path("profiles.x.deny_egress");
    auto p = Compile(in_);
    ASSERT_TRUE(p.ok()) << p.status();
    policy_ = std::make_unique<CompiledPolicy>(*std::move(p));
  }
  void TearDown() override { sink_.reset(); }

  void Start(uid_t uid = geteuid()) {
    TraceSink::Options o;
    o.peer_uid = uid;
    o.now_ms = [this] { return now_ms_.load(); };
    auto sink = TraceSink::Create(
        path_, o, [this](const TraceConnect& c) { return ConnectEntry(c, policy_.get()); },
        [this](pb::LogEntry e) {
          std::lock_guard<std::mutex> lock(mu_);
          entries_.push_back(std::move(e));
          cv_.notify_all();
        });
    ASSERT_TRUE(sink.ok()) << sink.status();
    sink_ = *std::move(sink);
  }
  // Waits for at least `n` entries; returns them.
  std::vector<pb::LogEntry> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kWait, [&] { return entries_.size() >= n; });
    return entries_;
  }
  std::vector<pb::LogEntry> Entries() {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_;
  }

  test::TempDir tmp_{"trace"};
  std::string path_;
  CompileInput in_;
  std::unique_ptr<CompiledPolicy> policy_;
  std::atomic<int64_t> now_ms_{1'000'000};
  std::unique_ptr<TraceSink> sink_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<pb::LogEntry> entries_;
};

TEST_F(TraceSinkTest, HandshakeThenConnectExitLogsRuleAndErrno) {
  Start();
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  FakeSentry sentry(path_);
  ASSERT_TRUE(sentry.connected());
  ASSERT_EQ(sentry.Handshake(), 1);
  ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr4("198.51.100.2", 443), 0, "curl")));
  ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr4("10.203.0.2", 80), EACCES, "perl")));
  ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr6("2001:db8:51::2", 8080), EACCES, "node")));
  ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr4("198.51.100.2", 53), EACCES, "dig")));
  std::vector<pb::LogEntry> e = WaitFor(4);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].kind(), pb::LOG_KIND_CONNECT_ALLOWED);
  EXPECT_EQ(e[0].destination(), "198.51.100.2");
  EXPECT_EQ(e[0].port(), 443u);
  EXPECT_EQ(e[0].process(), "curl");
  EXPECT_EQ(e[0].rule().destination().prefix(), "198.51.100.0/24");
  EXPECT_EQ(e[0].rule().action(), pb::RULE_ACTION_ALLOW);
  EXPECT_EQ(e[0].time_unix_ms(), 1'700'000'000'000);
  EXPECT_EQ(e[1].kind(), pb::LOG_KIND_CONNECT_REFUSED);
  EXPECT_EQ(e[1].rule().destination().prefix(), "10.0.0.0/8");
  EXPECT_EQ(e[1].rule().action(), pb::RULE_ACTION_DENY);
  EXPECT_NE(e[1].detail().find("EACCES"), std::string::npos) << e[1].detail();
  EXPECT_EQ(e[2].kind(), pb::LOG_KIND_CONNECT_REFUSED);
  EXPECT_EQ(e[2].destination(), "2001:db8:51::2");
  EXPECT_EQ(e[2].port(), 8080u);
  EXPECT_EQ(e[2].rule().source().kind(), pb::RULE_KIND_DEFAULT);
  // Allowed by the table, refused ahead of it: the DNS-port rule.
  EXPECT_EQ(e[3].kind(), pb::LOG_KIND_CONNECT_REFUSED);
  EXPECT_NE(e[3].detail().find("ahead of the table"), std::string::npos) << e[3].detail();
}

TEST_F(TraceSinkTest, OversizeAndTruncatedMessagesEndTheConnection) {
  for (const std::string& bad :
       {std::string(kMaxTraceMessage + 1, 'x'), std::string("\x08\x00", 2),
        Header(kTraceMessageConnect, 0, 200) + "short",
        Header(kTraceMessageConnect, 0) + std::string("\xff\xff\xff", 3)}) {
    SCOPED_TRACE(bad.size());
    entries_.clear();
    sink_.reset();
    Start();
    FakeSentry sentry(path_);
    ASSERT_EQ(sentry.Handshake(), 1);
    ASSERT_TRUE(sentry.Send(bad));
    EXPECT_TRUE(sentry.ClosedByPeer());
    std::vector<pb::LogEntry> e = WaitFor(1);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].kind(), pb::LOG_KIND_LOG_GAP);
    EXPECT_NE(e[0].detail().find("later connects of this session are not logged"),
              std::string::npos);
  }
}

TEST_F(TraceSinkTest, SecondConnectionRefused) {
  Start();
  FakeSentry first(path_);
  ASSERT_EQ(first.Handshake(), 1);
  FakeSentry second(path_);
  ASSERT_TRUE(second.connected());
  EXPECT_EQ(second.Handshake(), -1);
  // The first one still logs.
  ASSERT_TRUE(first.Send(ConnectMessage(Sockaddr4("198.51.100.2", 443), 0, "curl")));
  ASSERT_EQ(WaitFor(1).size(), 1u);
  // And after the first ends, nobody else is taken either.
  sink_.reset();
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "the socket is removed with the sink";
}

TEST_F(TraceSinkTest, WrongPeerUidRefused) {
  Start(geteuid() + 1);
  FakeSentry sentry(path_);
  ASSERT_TRUE(sentry.connected());
  EXPECT_EQ(sentry.Handshake(), -1);
  EXPECT_TRUE(Entries().empty());
}

TEST_F(TraceSinkTest, UnknownTypesIgnored) {
  Start();
  FakeSentry sentry(path_);
  ASSERT_EQ(sentry.Handshake(), 1);
  // An unknown type with garbage, a longer header of a later version, a
  // Unix-socket connect and an enter point without an exit: none logged.
  ASSERT_TRUE(sentry.Send(Header(999, 0) + "garbage\xff\xff"));
  gvisor::syscall::Connect unix_connect;
  unix_connect.mutable_exit()->set_errorno(0);
  unix_connect.set_address(std::string("\x01\x00/run/x", 8));
  ASSERT_TRUE(sentry.Send(Header(kTraceMessageConnect, 0) + unix_connect.SerializeAsString()));
  gvisor::syscall::Connect enter;
  enter.set_address(Sockaddr4("198.51.100.3", 1));
  ASSERT_TRUE(sentry.Send(Header(kTraceMessageConnect, 0) + enter.SerializeAsString()));
  ASSERT_TRUE(sentry.Send(Header(kTraceMessageConnect, 0, 16) + std::string(8, '\0') +
                          ConnectMessage(Sockaddr4("198.51.100.4", 22), 0, "ssh").substr(8)));
  std::vector<pb::LogEntry> e = WaitFor(1);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].destination(), "198.51.100.4");
  EXPECT_EQ(e[0].process(), "ssh");
}

TEST_F(TraceSinkTest, FoldsIdenticalAttemptsWithinASecond) {
  Start();
  FakeSentry sentry(path_);
  ASSERT_EQ(sentry.Handshake(), 1);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr4("10.1.2.3", 80), EACCES, "perl")));
  }
  // A different attempt flushes the folded ones first.
  ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr4("10.1.2.3", 81), EACCES, "perl")));
  std::vector<pb::LogEntry> e = WaitFor(3);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].port(), 80u);
  EXPECT_EQ(e[0].count(), 1u);
  EXPECT_EQ(e[1].port(), 80u);
  EXPECT_EQ(e[1].count(), 49u);
  EXPECT_EQ(e[2].port(), 81u);
  EXPECT_EQ(e[2].count(), 1u);
  // Past the window the same attempt is logged again.
  now_ms_ += 1500;
  ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr4("10.1.2.3", 81), EACCES, "perl")));
  e = WaitFor(4);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[3].count(), 1u);
}

TEST_F(TraceSinkTest, DroppedCounterBecomesGap) {
  Start();
  FakeSentry sentry(path_);
  ASSERT_EQ(sentry.Handshake(), 1);
  ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr4("198.51.100.2", 443), 0, "curl", 0)));
  ASSERT_TRUE(sentry.Send(ConnectMessage(Sockaddr4("198.51.100.2", 444), 0, "curl", 7)));
  std::vector<pb::LogEntry> e = WaitFor(3);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[1].kind(), pb::LOG_KIND_LOG_GAP);
  EXPECT_EQ(e[1].count(), 7u);
  EXPECT_EQ(e[2].port(), 444u);
}

TEST_F(TraceSinkTest, ProcessNamesThatAreNotUtf8StillLogAndAreEscaped) {
  Start();
  FakeSentry sentry(path_);
  ASSERT_EQ(sentry.Handshake(), 1);
  // Crafted by hand: the generated message would refuse to serialize it.
  gvisor::syscall::Connect c;
  c.mutable_exit()->set_errorno(EACCES);
  c.set_address(Sockaddr4("10.1.2.3", 80));
  std::string raw = c.SerializeAsString();
  const std::string name = "\xff\x1b]0;pwned\x07" + std::string(100, 'a');
  raw += std::string("\x0a") + static_cast<char>(name.size() + 2) + "\x4a" +
         static_cast<char>(name.size()) + name;
  ASSERT_TRUE(sentry.Send(Header(kTraceMessageConnect, 0) + raw));
  std::vector<pb::LogEntry> e = WaitFor(1);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].process().substr(0, 21), "\\xff\\x1b]0;pwned\\x07a");
  EXPECT_LE(e[0].process().size(), 4 * kMaxTraceProcessName);
  EXPECT_EQ(e[0].process().find('\x1b'), std::string::npos);
  EXPECT_EQ(e[0].kind(), pb::LOG_KIND_CONNECT_REFUSED);
}

TEST(TraceMessageTest, SockaddrIsParsedStrictly) {
  EXPECT_FALSE(ParseInetSockaddr(Sockaddr4("10.0.0.1", 1).substr(0, 15)).has_value());
  EXPECT_FALSE(ParseInetSockaddr(Sockaddr6("::1", 1).substr(0, 23)).has_value());
  EXPECT_FALSE(ParseInetSockaddr(std::string(129, '\x02')).has_value());
  EXPECT_FALSE(ParseInetSockaddr("").has_value());
  auto v4 = ParseInetSockaddr(Sockaddr4("10.0.0.1", 8080));
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->first.ToString(), "10.0.0.1/32");
  EXPECT_EQ(v4->second, 8080);
  auto mapped = ParseInetSockaddr(Sockaddr6("::ffff:10.0.0.1", 1));
  ASSERT_TRUE(mapped.has_value());
  EXPECT_EQ(mapped->first.ToString(), "::ffff:10.0.0.1/128");
}

}  // namespace
}  // namespace lazaret::netpolicyd
