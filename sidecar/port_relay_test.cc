// The router's end of an inbound forward on real sockets: a Unix socket in
// a scratch directory reaches a server on 127.0.0.1, else on ::1, of this
// namespace; a peer with another uid is refused; limits and close.
#include "sidecar/port_relay.h"
#include "tests/support/test_support.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

namespace lazaret::netrouter {
namespace {

// A server on the loopback of `family` that writes `banner` to each client
// and closes; port 0 picks one.
struct Server {
  int fd = -1;
  uint16_t port = 0;
  std::thread thread;
  Server(int family, const std::string& banner) {
    fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int on = 1;
    if (family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    sockaddr_storage ss{};
    socklen_t len;
    if (family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof(*a);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_loopback;
      len = sizeof(*a);
    }
    if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd, 8) != 0) return;
    getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                   : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
    thread = std::thread([this, banner] {
      for (;;) {
        const int c = accept(fd, nullptr, nullptr);
        if (c < 0) return;
        (void)!write(c, banner.data(), banner.size());
        close(c);
      }
    });
  }
  ~Server() {
    shutdown(fd, SHUT_RDWR);
    close(fd);
    if (thread.joinable()) thread.join();
  }
};

struct Dir {
  std::string path;
  Dir() {
    char t[] = "/tmp/lz-port-relay.XXXXXX";
    path = mkdtemp(t);
  }
  ~Dir() {
    std::string cmd = "/bin/rm -rf " + path;
    (void)!system(cmd.c_str());
  }
};

TEST(PortRelayTest, ReachesLoopbackBoundServerThenV6OnlyServer) {
  Dir dir;
  absl::StatusOr<std::unique_ptr<PortRelay>> relay = PortRelay::Create({.socket_dir = dir.path});
  ASSERT_TRUE(relay.ok()) << relay.status();
  Server v4(AF_INET, "hello from 127.0.0.1\n");
  ASSERT_GT(v4.port, 0);
  ASSERT_TRUE((*relay)->Open(v4.port).ok());
  struct stat st {};
  ASSERT_EQ(stat((*relay)->SocketPath(v4.port).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(test::ReadUnixUntilEof((*relay)->SocketPath(v4.port)), "hello from 127.0.0.1\n");
  Server v6(AF_INET6, "hello from ::1\n");
  if (v6.port == 0) GTEST_SKIP() << "no IPv6 loopback here";
  ASSERT_TRUE((*relay)->Open(v6.port).ok());
  EXPECT_EQ(test::ReadUnixUntilEof((*relay)->SocketPath(v6.port)), "hello from ::1\n");
}

TEST(PortRelayTest, WrongPeerUidRefused) {
  Dir dir;
  absl::StatusOr<std::unique_ptr<PortRelay>> relay =
      PortRelay::Create({.socket_dir = dir.path, .peer_uid = getuid() + 1});
  ASSERT_TRUE(relay.ok()) << relay.status();
  Server v4(AF_INET, "secret\n");
  ASSERT_TRUE((*relay)->Open(v4.port).ok());
  EXPECT_EQ(test::ReadUnixUntilEof((*relay)->SocketPath(v4.port)), "");
}

TEST(PortRelayTest, LimitsAndClose) {
  Dir dir;
  absl::StatusOr<std::unique_ptr<PortRelay>> relay =
      PortRelay::Create({.socket_dir = dir.path, .max_ports = 2});
  ASSERT_TRUE(relay.ok()) << relay.status();
  EXPECT_TRUE((*relay)->Open(3000).ok());
  EXPECT_TRUE((*relay)->Open(3000).ok()) << "again: a no-op";
  EXPECT_TRUE((*relay)->Open(3001).ok());
  EXPECT_EQ((*relay)->Open(3002).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*relay)->Open(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*relay)->Open(70000).code(), absl::StatusCode::kInvalidArgument);
  // Nothing listens inside: the connection is closed at once.
  EXPECT_EQ(test::ReadUnixUntilEof((*relay)->SocketPath(3000)), "");
  ASSERT_TRUE((*relay)->Close(3000).ok());
  EXPECT_EQ((*relay)->List(), std::vector<uint32_t>{3001});
  EXPECT_EQ(test::ReadUnixUntilEof((*relay)->SocketPath(3000)), "<no connect>");
}

}  // namespace
}  // namespace lazaret::netrouter
