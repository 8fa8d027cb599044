// The egress channel's wire format and descriptor passing over real
// SOCK_SEQPACKET socket pairs, and EgressChannel against a router stand-in
// on a real Unix socket.
#include "services/wire/egress_channel.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace lazaret::egress {
namespace {

using namespace std::chrono_literals;

struct Pair {
  fs::UniqueFd a, b;
};

Pair SeqpacketPair() {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
  return {fs::UniqueFd(fds[0]), fs::UniqueFd(fds[1])};
}

struct Pipe {
  fs::UniqueFd read, write;
};

Pipe MakePipe() {
  int fds[2];
  EXPECT_EQ(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  return {fs::UniqueFd(fds[0]), fs::UniqueFd(fds[1])};
}

// Sends raw bytes with `fds` attached.
void SendRaw(int socket, const void* data, size_t size, const std::vector<int>& fds) {
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ASSERT_EQ(sendmsg(socket, &msg, MSG_NOSIGNAL), static_cast<ssize_t>(size));
}

// True when every write end of `pipes` is closed in this process: their
// read ends see EOF (the test closed its own copies first).
bool AllWriteEndsClosed(std::vector<Pipe>& pipes) {
  for (Pipe& p : pipes) {
    char c;
    if (read(p.read.get(), &c, 1) != 0) return false;
  }
  return true;
}

TEST(EgressChannelWireTest, EachTypeRoundTrips) {
  for (const Message& m :
       {AcceptedMessage(7, 443), ConnectedMessage(9, 0), ConnectedMessage(10, EACCES),
        *ConnectMessage(11, "203.0.113.5", 443), *ConnectMessage(12, "2001:db8::7", 80)}) {
    auto bytes = Encode(m);
    absl::StatusOr<Message> d = Decode(bytes.data(), bytes.size());
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->type, m.type);
    EXPECT_EQ(d->id, m.id);
    EXPECT_EQ(d->port, m.port);
    EXPECT_EQ(d->family, m.family);
    EXPECT_EQ(d->address, m.address);
    EXPECT_EQ(d->error, m.error);
  }
}

TEST(EgressChannelWireTest, TheLayoutIsLittleEndianWithAVersionedHeader) {
  auto bytes = Encode(AcceptedMessage(0x0102030405060708, 0x01bb));
  EXPECT_EQ(bytes[0], kChannelVersion);
  EXPECT_EQ(bytes[1], static_cast<uint8_t>(MessageType::kAccepted));
  EXPECT_EQ(bytes[8], 0x08);
  EXPECT_EQ(bytes[15], 0x01);
  EXPECT_EQ(bytes[16], 0xbb);
  EXPECT_EQ(bytes[17], 0x01);
}

TEST(EgressChannelWireTest, MalformedMessagesAreRefused) {
  auto good = Encode(*ConnectMessage(1, "203.0.113.5", 443));
  EXPECT_FALSE(Decode(good.data(), good.size() - 1).ok());
  const auto refused = [&](size_t at, uint8_t value) {
    auto b = good;
    b[at] = value;
    return !Decode(b.data(), b.size()).ok();
  };
  EXPECT_TRUE(refused(0, 2)) << "version";
  EXPECT_TRUE(refused(1, 0)) << "type 0";
  EXPECT_TRUE(refused(1, 4)) << "type 4";
  EXPECT_TRUE(refused(2, 5)) << "family";
  EXPECT_TRUE(refused(3, 1)) << "reserved";
  EXPECT_TRUE(refused(4, 1)) << "an error in a CONNECT";
  EXPECT_TRUE(refused(18, 1)) << "reserved";
  EXPECT_TRUE(refused(30, 1)) << "bytes past an IPv4 address";
  auto accepted = Encode(AcceptedMessage(1, 443));
  accepted[16] = accepted[17] = 0;
  EXPECT_FALSE(Decode(accepted.data(), accepted.size()).ok()) << "port 0";
  auto connected = Encode(ConnectedMessage(1, 0));
  connected[20] = 1;
  EXPECT_FALSE(Decode(connected.data(), connected.size()).ok()) << "an address in CONNECTED";
  connected = Encode(ConnectedMessage(1, 0));
  connected[7] = 0x80;
  EXPECT_FALSE(Decode(connected.data(), connected.size()).ok()) << "a negative errno";
  EXPECT_FALSE(ConnectMessage(1, "example.com", 443).ok());
}

TEST(EgressChannelFdTest, AnAcceptedDescriptorArrivesAndWorks) {
  Pair s = SeqpacketPair();
  Pipe p = MakePipe();
  ASSERT_TRUE(SendWithFd(s.a.get(), AcceptedMessage(5, 443), p.write.get()).ok());
  p.write.reset();
  absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(s.b.get());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->message.type, MessageType::kAccepted);
  EXPECT_EQ((*r)->message.id, 5u);
  EXPECT_EQ((*r)->message.port, 443);
  ASSERT_TRUE((*r)->fd.valid());
  EXPECT_NE(fcntl((*r)->fd.get(), F_GETFD) & FD_CLOEXEC, 0) << "received close-on-exec";
  ASSERT_EQ(write((*r)->fd.get(), "x", 1), 1);
  char c = 0;
  ASSERT_EQ(read(p.read.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');
}

TEST(EgressChannelFdTest, ARefusalCarriesNoDescriptorAndSendChecksIt) {
  Pair s = SeqpacketPair();
  Pipe p = MakePipe();
  EXPECT_FALSE(SendWithFd(s.a.get(), ConnectedMessage(1, 0), -1).ok());
  EXPECT_FALSE(SendWithFd(s.a.get(), ConnectedMessage(1, EACCES), p.write.get()).ok());
  EXPECT_FALSE(SendWithFd(s.a.get(), *ConnectMessage(1, "::1", 1), p.write.get()).ok());
  ASSERT_TRUE(SendWithFd(s.a.get(), ConnectedMessage(3, ECONNREFUSED), -1).ok());
  absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(s.b.get());
  ASSERT_TRUE(r.ok() && r->has_value()) << r.status();
  EXPECT_EQ((*r)->message.error, ECONNREFUSED);
  EXPECT_FALSE((*r)->fd.valid());
}

TEST(EgressChannelFdTest, AMissingDescriptorIsRefused) {
  Pair s = SeqpacketPair();
  auto bytes = Encode(AcceptedMessage(1, 443));
  SendRaw(s.a.get(), bytes.data(), bytes.size(), {});
  absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(s.b.get());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
}

TEST(EgressChannelFdTest, ADescriptorWhereNoneBelongsIsRefusedAndClosed) {
  Pair s = SeqpacketPair();
  std::vector<Pipe> pipes;
  pipes.push_back(MakePipe());
  auto bytes = Encode(*ConnectMessage(1, "203.0.113.5", 443));
  SendRaw(s.a.get(), bytes.data(), bytes.size(), {pipes[0].write.get()});
  pipes[0].write.reset();
  absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(s.b.get());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_TRUE(AllWriteEndsClosed(pipes));
}

TEST(EgressChannelFdTest, ExtraDescriptorsAreRefusedAndAllClosed) {
  Pair s = SeqpacketPair();
  std::vector<Pipe> pipes;
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    pipes.push_back(MakePipe());
    fds.push_back(pipes.back().write.get());
  }
  auto bytes = Encode(AcceptedMessage(1, 443));
  SendRaw(s.a.get(), bytes.data(), bytes.size(), fds);
  for (Pipe& p : pipes) p.write.reset();
  absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(s.b.get());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_TRUE(AllWriteEndsClosed(pipes));
}

TEST(EgressChannelFdTest, TruncatedControlDataIsRefusedAndEveryDescriptorClosed) {
  Pair s = SeqpacketPair();
  std::vector<Pipe> pipes;
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) {
    pipes.push_back(MakePipe());
    fds.push_back(pipes.back().write.get());
  }
  auto bytes = Encode(AcceptedMessage(1, 443));
  SendRaw(s.a.get(), bytes.data(), bytes.size(), fds);
  for (Pipe& p : pipes) p.write.reset();
  absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(s.b.get());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too many descriptors"), std::string::npos) << r.status();
  EXPECT_TRUE(AllWriteEndsClosed(pipes));
}

TEST(EgressChannelFdTest, ALongOrShortDatagramIsRefusedAndItsDescriptorClosed) {
  Pair s = SeqpacketPair();
  auto bytes = Encode(AcceptedMessage(1, 443));
  std::vector<uint8_t> longer(bytes.begin(), bytes.end());
  longer.push_back(0);
  std::vector<Pipe> pipes;
  pipes.push_back(MakePipe());
  SendRaw(s.a.get(), longer.data(), longer.size(), {pipes[0].write.get()});
  pipes[0].write.reset();
  absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(s.b.get());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("longer than"), std::string::npos) << r.status();
  EXPECT_TRUE(AllWriteEndsClosed(pipes));
  SendRaw(s.a.get(), bytes.data(), bytes.size() - 1, {});
  r = ReceiveWithFd(s.b.get());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
}

TEST(EgressChannelFdTest, NothingQueuedAndClosedAreTold) {
  Pair s = SeqpacketPair();
  absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(s.b.get(), MSG_DONTWAIT);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->has_value());
  s.a.reset();
  r = ReceiveWithFd(s.b.get(), MSG_DONTWAIT);
  EXPECT_TRUE(absl::IsOutOfRange(r.status())) << r.status();
}

// A router stand-in: a SEQPACKET listener on a temporary path.
class EgressChannelClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lzeg.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/egress.sock";
    listener_.reset(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    ASSERT_EQ(bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(listen(listener_.get(), 4), 0);
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  fs::UniqueFd AcceptRouterSide() {
    return fs::UniqueFd(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }

  std::string dir_, path_;
  fs::UniqueFd listener_;
};

TEST_F(EgressChannelClientTest, AcceptedConnectionsAreDeliveredAndConnectsMatchedById) {
  std::mutex mu;
  std::vector<std::pair<uint64_t, uint16_t>> accepted;
  std::vector<fs::UniqueFd> accepted_fds;
  EgressChannel::Options o;
  o.on_accepted = [&](uint64_t id, uint16_t port, fs::UniqueFd fd) {
    std::lock_guard<std::mutex> lock(mu);
    accepted.emplace_back(id, port);
    accepted_fds.push_back(std::move(fd));
  };
  absl::StatusOr<std::unique_ptr<EgressChannel>> ch = EgressChannel::Connect(path_, o);
  ASSERT_TRUE(ch.ok()) << ch.status();
  fs::UniqueFd router = AcceptRouterSide();
  ASSERT_TRUE(router.valid());

  // Two connects at once; the router answers the second first.
  Pair up = SeqpacketPair();
  EgressChannel::Upstream r1, r2;
  std::thread t1([&] {
    auto r = (*ch)->Connect("203.0.113.5", 443);
    ASSERT_TRUE(r.ok()) << r.status();
    r1 = std::move(*r);
  });
  std::thread t2([&] {
    auto r = (*ch)->Connect("2001:db8::7", 80);
    ASSERT_TRUE(r.ok()) << r.status();
    r2 = std::move(*r);
  });
  std::vector<Message> requests;
  for (int i = 0; i < 2; ++i) {
    auto r = ReceiveWithFd(router.get());
    ASSERT_TRUE(r.ok() && r->has_value()) << r.status();
    EXPECT_EQ((*r)->message.type, MessageType::kConnect);
    requests.push_back((*r)->message);
  }
  ASSERT_NE(requests[0].id, requests[1].id);
  const Message& v4 = requests[0].family == AF_INET ? requests[0] : requests[1];
  const Message& v6 = requests[0].family == AF_INET ? requests[1] : requests[0];
  EXPECT_EQ(v4.port, 443);
  EXPECT_EQ(v6.port, 80);
  ASSERT_TRUE(SendWithFd(router.get(), ConnectedMessage(v6.id, EACCES), -1).ok());
  ASSERT_TRUE(SendWithFd(router.get(), ConnectedMessage(v4.id, 0), up.a.get()).ok());
  ASSERT_TRUE(SendWithFd(router.get(), AcceptedMessage(77, 443), up.b.get()).ok());
  t1.join();
  t2.join();
  EXPECT_EQ(r1.error, 0);
  ASSERT_TRUE(r1.fd.valid());
  EXPECT_EQ(r2.error, EACCES);
  EXPECT_FALSE(r2.fd.valid());
  // The descriptor is the router's: bytes written to it arrive at up.b.
  ASSERT_EQ(send(r1.fd.get(), "ping", 4, MSG_NOSIGNAL), 4);
  char buf[8];
  ASSERT_EQ(recv(up.b.get(), buf, sizeof(buf), 0), 4);
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!accepted.empty()) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0], std::make_pair(uint64_t{77}, uint16_t{443}));
  EXPECT_TRUE(accepted_fds[0].valid());
}

TEST_F(EgressChannelClientTest, ARouterOfAnotherUidIsRefused) {
  EgressChannel::Options o;
  o.peer_uid = geteuid() + 1;
  absl::StatusOr<std::unique_ptr<EgressChannel>> ch = EgressChannel::Connect(path_, o);
  EXPECT_TRUE(absl::IsPermissionDenied(ch.status())) << ch.status();
}

TEST_F(EgressChannelClientTest, AClosedOrMisbehavingRouterFailsWaitingConnects) {
  std::atomic<int> closed{0};
  EgressChannel::Options o;
  o.on_closed = [&](const absl::Status&) { ++closed; };
  absl::StatusOr<std::unique_ptr<EgressChannel>> ch = EgressChannel::Connect(path_, o);
  ASSERT_TRUE(ch.ok()) << ch.status();
  fs::UniqueFd router = AcceptRouterSide();
  std::thread waiter([&] {
    auto r = (*ch)->Connect("203.0.113.5", 443);
    EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  });
  auto req = ReceiveWithFd(router.get());
  ASSERT_TRUE(req.ok() && req->has_value());
  // A CONNECT from the router breaks the protocol: the channel ends.
  auto bad = Encode(*ConnectMessage(1, "203.0.113.5", 443));
  SendRaw(router.get(), bad.data(), bad.size(), {});
  waiter.join();
  EXPECT_TRUE((*ch)->closed());
  // on_closed runs on the receive thread, beside the failing Connect.
  for (int i = 0; i < 200 && closed.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(closed.load(), 1);
  auto after = (*ch)->Connect("203.0.113.5", 443);
  EXPECT_TRUE(absl::IsUnavailable(after.status())) << after.status();
}

TEST_F(EgressChannelClientTest, AnUnansweredConnectTimesOutAndALateAnswerIsDropped) {
  EgressChannel::Options o;
  o.connect_timeout = 100ms;
  absl::StatusOr<std::unique_ptr<EgressChannel>> ch = EgressChannel::Connect(path_, o);
  ASSERT_TRUE(ch.ok()) << ch.status();
  fs::UniqueFd router = AcceptRouterSide();
  auto r = (*ch)->Connect("203.0.113.5", 443);
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  auto req = ReceiveWithFd(router.get());
  ASSERT_TRUE(req.ok() && req->has_value());
  std::vector<Pipe> pipes;
  pipes.push_back(MakePipe());
  ASSERT_TRUE(
      SendWithFd(router.get(), ConnectedMessage((*req)->message.id, 0), pipes[0].write.get()).ok());
  pipes[0].write.reset();
  // The late descriptor is closed by the channel, which stays open.
  bool closed = false;
  for (int i = 0; i < 200 && !closed; ++i) {
    char c;
    closed = read(pipes[0].read.get(), &c, 1) == 0;
    if (!closed) std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(closed);
  EXPECT_FALSE((*ch)->closed());
}

}  // namespace
}  // namespace lazaret::egress
