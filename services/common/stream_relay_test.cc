// The stream relay on real sockets: bytes both ways, half-close passed on,
// the per-group limit, admission, and a removed group closing its
// connections.
#include "services/common/stream_relay.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace lazaret {
namespace {

// A listening TCP socket on 127.0.0.1 (any port) and its port.
int Listen(uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

int Dial(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads until `want` bytes or EOF/error, waiting at most 5 s in all.
std::string ReadUpTo(int fd, size_t want) {
  std::string out;
  char buf[4096];
  while (out.size() < want) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) break;
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// The far end: a listener whose accepted connections the test reads.
struct Far {
  uint16_t port = 0;
  int fd = Listen(&port);
  ~Far() { close(fd); }
  StreamRelay::Connect Connector() const {
    const uint16_t p = port;
    return [p]() -> absl::StatusOr<int> {
      const int c = Dial(p);
      if (c < 0) return absl::UnavailableError("far side unreachable");
      return c;
    };
  }
};

TEST(StreamRelayTest, PassesBytesBothWaysAndHalfCloses) {
  absl::StatusOr<std::unique_ptr<StreamRelay>> relay = StreamRelay::Start({});
  ASSERT_TRUE(relay.ok()) << relay.status();
  Far far;
  ASSERT_GE(far.fd, 0);
  uint16_t near_port = 0;
  const int near = Listen(&near_port);
  ASSERT_GE(near, 0);
  (*relay)->AddListener(1, near, far.Connector());
  const int client = Dial(near_port);
  ASSERT_GE(client, 0);
  const int server = accept(far.fd, nullptr, nullptr);
  ASSERT_GE(server, 0);
  const std::string big(200 * 1024, 'x');  // more than one buffer's worth
  ASSERT_EQ(write(client, big.data(), big.size()), static_cast<ssize_t>(big.size()));
  shutdown(client, SHUT_WR);
  const std::string got = ReadUpTo(server, big.size() + 1);
  EXPECT_EQ(got.size(), big.size());
  EXPECT_TRUE(got == big) << "all bytes, then the end";
  ASSERT_EQ(write(server, "banner\n", 7), 7);
  close(server);
  EXPECT_EQ(ReadUpTo(client, 100), "banner\n");
  close(client);
}

TEST(StreamRelayTest, LimitAdmissionAndRemoval) {
  absl::StatusOr<std::unique_ptr<StreamRelay>> relay =
      StreamRelay::Start({.max_connections_per_group = 1, .buffer_bytes = 1024});
  ASSERT_TRUE(relay.ok()) << relay.status();
  Far far;
  uint16_t port_a = 0;
  uint16_t port_b = 0;
  (*relay)->AddListener(7, Listen(&port_a), far.Connector());
  (*relay)->AddListener(8, Listen(&port_b), far.Connector(), [](int) { return false; });
  const int first = Dial(port_a);
  ASSERT_GE(first, 0);
  const int served = accept(far.fd, nullptr, nullptr);
  ASSERT_GE(served, 0);
  // Over the limit of group 7: closed at once.
  const int second = Dial(port_a);
  ASSERT_GE(second, 0);
  EXPECT_EQ(ReadUpTo(second, 1), "");
  // Not admitted: closed at once, the far side never dialled.
  const int refused = Dial(port_b);
  ASSERT_GE(refused, 0);
  EXPECT_EQ(ReadUpTo(refused, 1), "");
  EXPECT_EQ((*relay)->OpenConnections(7), 1u);
  EXPECT_EQ((*relay)->OpenConnections(8), 0u);
  // Removing the group ends its connection and stops the listener.
  (*relay)->RemoveGroup(7);
  EXPECT_EQ(ReadUpTo(served, 1), "");
  EXPECT_EQ(ReadUpTo(first, 1), "");
  EXPECT_LT(Dial(port_a), 0);
  close(first);
  close(second);
  close(refused);
  close(served);
}

}  // namespace
}  // namespace lazaret
