// The host's end of inbound forwards on real sockets: the host's loopback
// only by default, both families; a busy port is an error; ports below
// 1024 refused; a session's forwards gone when it detaches.
#include "services/netpolicyd/inbound_ports.h"
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

namespace lazaret::netpolicyd {
namespace {

constexpr char kSession[] = "0123456789ab";

// A scratch runtime dir with the session router's in/<port>.sock served by
// a thread that writes `banner` to each client (what the router relays).
struct FakeRouter {
  std::string runtime;
  int fd = -1;
  std::thread thread;
  FakeRouter(uint32_t sandbox_port, const std::string& banner) {
    char t[] = "/tmp/lz-inbound.XXXXXX";
    runtime = mkdtemp(t);
    const std::string dir = runtime + "/sessions/" + kSession + "/router/in";
    const std::string cmd = "/bin/mkdir -p " + dir;
    if (system(cmd.c_str()) != 0) return;
    const std::string path = dir + "/" + std::to_string(sandbox_port) + ".sock";
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), path.size());
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 8) != 0) return;
    thread = std::thread([this, banner] {
      for (;;) {
        const int c = accept(fd, nullptr, nullptr);
        if (c < 0) return;
        (void)!write(c, banner.data(), banner.size());
        close(c);
      }
    });
  }
  ~FakeRouter() {
    shutdown(fd, SHUT_RDWR);
    close(fd);
    if (thread.joinable()) thread.join();
    const std::string cmd = "/bin/rm -rf " + runtime;
    (void)!system(cmd.c_str());
  }
};

// A free TCP port on 127.0.0.1 at or above 1024.
uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

lazaret::common::v1::PortForward Forward(uint32_t host, uint32_t sandbox,
                                         const std::string& address = "") {
  lazaret::common::v1::PortForward f;
  f.set_host_address(address);
  f.set_host_port(host);
  f.set_sandbox_port(sandbox);
  return f;
}

TEST(InboundPortsTest, BindsLoopbackOnlyByDefault) {
  FakeRouter router(3000, "dev server\n");
  absl::StatusOr<std::unique_ptr<InboundPorts>> ports = InboundPorts::Create(router.runtime);
  ASSERT_TRUE(ports.ok()) << ports.status();
  const uint16_t host = FreePort();
  absl::StatusOr<std::vector<lazaret::common::v1::PortForward>> list =
      (*ports)->Add(kSession, Forward(host, 3000));
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.1", host), "dev server\n");
  EXPECT_EQ(test::ReadTcpUntilEof("::1", host), "dev server\n");
  // Not on the wildcard: another loopback address of 127/8 is not bound.
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.2", host), "<refused>");
  // The sandbox port defaults to the host port.
  absl::StatusOr<std::vector<lazaret::common::v1::PortForward>> again =
      (*ports)->Add(kSession, Forward(FreePort(), 0, "127.0.0.1"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->back().sandbox_port(), again->back().host_port());
}

TEST(InboundPortsTest, BusyPortIsAnErrorAndLowPortsRefused) {
  FakeRouter router(3000, "x");
  absl::StatusOr<std::unique_ptr<InboundPorts>> ports = InboundPorts::Create(router.runtime);
  ASSERT_TRUE(ports.ok());
  const uint16_t host = FreePort();
  ASSERT_TRUE((*ports)->Add(kSession, Forward(host, 3000)).ok());
  EXPECT_EQ((*ports)->Add(kSession, Forward(host, 3001)).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ((*ports)->Add("fedcba987654", Forward(host, 3000)).status().code(),
            absl::StatusCode::kAlreadyExists)
      << "held by another session: busy";
  EXPECT_EQ((*ports)->Add(kSession, Forward(80, 3000)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*ports)->Add("not-a-session", Forward(host + 1, 3000)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(InboundPortsTest, RemovedAndClosedOnDetach) {
  FakeRouter router(3000, "x");
  absl::StatusOr<std::unique_ptr<InboundPorts>> ports = InboundPorts::Create(router.runtime);
  ASSERT_TRUE(ports.ok());
  const uint16_t a = FreePort();
  ASSERT_TRUE((*ports)->Add(kSession, Forward(a, 3000)).ok());
  const uint16_t b = FreePort();
  ASSERT_TRUE((*ports)->Add(kSession, Forward(b, 3000)).ok());
  uint32_t sandbox = 0;
  bool unused = false;
  ASSERT_TRUE((*ports)->Remove(kSession, a, &sandbox, &unused).ok());
  EXPECT_EQ(sandbox, 3000u);
  EXPECT_FALSE(unused) << "host port b still forwards to 3000";
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.1", a), "<refused>");
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.1", b), "x");
  (*ports)->CloseSession(kSession);
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.1", b), "<refused>");
  EXPECT_TRUE((*ports)->List(kSession).empty());
}

}  // namespace
}  // namespace lazaret::netpolicyd
