// Inbound ports end to end: a server inside the sandbox listening on the
// sandbox's own 127.0.0.1 is reached from the host's 127.0.0.1 and ::1
// through a profile's `ports` and through `lazaret port SESSION add`, is
// not reached through the host's other addresses, and a removed forward -
// or one of a session that ended - is gone at once (docs/networking.md
// "Inbound ports"). Part of net_e2e_test (same binary, both modes); runs as
// root, lazaret as the mode's user.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/e2e/net_e2e_fixture.h"
#include "tests/e2e/run_e2e_support.h"
#include "tests/support/test_support.h"

namespace lazaret::test::e2e::net {
namespace {

constexpr char kPortsProfile[] = "netports";
constexpr char kBanner[] = "lz-inbound-banner";
constexpr int kSandboxPort = 3000;

// A TCP port of the host nobody holds now (at or above 1024).
uint16_t FreeHostPort() {
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

// Reads address:port until it answers `want` or 10 s pass; the last answer.
std::string ReadUntil(const std::string& address, uint16_t port, const std::string& want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string got;
  while (std::chrono::steady_clock::now() < deadline) {
    got = test::ReadTcpUntilEof(address, port);
    if (got == want) return got;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return got;
}

class NetE2ePortsTest : public NetE2eTest {
 protected:
  static uint16_t ProfileHostPort() {
    static const uint16_t port = FreeHostPort();
    return port;
  }
  // The shared session of a profile forwarding ProfileHostPort() to the
  // sandbox's 3000, with the probe serving a banner on 127.0.0.1:3000.
  static NetSession* Session() {
    static NetSession* s = [] () -> NetSession* {
      if (!W().AddProfile(kPortsProfile,
                          absl::StrCat("egress = \"open\"\nports = [\"", ProfileHostPort(), ":",
                                       kSandboxPort, "\"]\n"))
               .ok()) {
        return nullptr;
      }
      NetSession* session = W().SharedSession(kPortsProfile);
      if (session == nullptr) return nullptr;
      session->Shell(absl::StrCat("setsid ", kProbe, " listen 127.0.0.1 ", kSandboxPort, " 600 ",
                                  kBanner, " </dev/null >/dev/null 2>&1 &"));
      return session;
    }();
    return s;
  }
};

TEST_F(NetE2ePortsTest, ProbeListeningOn127InsideIsReachedFromHostLoopback) {
  NetSession* s = Session();
  ASSERT_NE(s, nullptr) << W().SessionError(kPortsProfile);
  const std::string banner = absl::StrCat(kBanner, "\n");
  EXPECT_EQ(ReadUntil("127.0.0.1", ProfileHostPort(), banner), banner);
  EXPECT_EQ(test::ReadTcpUntilEof("::1", ProfileHostPort()), banner);
}

TEST_F(NetE2ePortsTest, NotReachableOnTheHostsOtherAddresses) {
  NetSession* s = Session();
  ASSERT_NE(s, nullptr) << W().SessionError(kPortsProfile);
  const std::string banner = absl::StrCat(kBanner, "\n");
  ASSERT_EQ(ReadUntil("127.0.0.1", ProfileHostPort(), banner), banner);
  ifaddrs* list = nullptr;
  ASSERT_EQ(getifaddrs(&list), 0);
  int checked = 0;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof(text));
    if (std::strncmp(text, "127.", 4) == 0) continue;
    EXPECT_EQ(test::ReadTcpUntilEof(text, ProfileHostPort()), "<refused>")
        << i->ifa_name << " " << text;
    ++checked;
  }
  freeifaddrs(list);
  EXPECT_GT(checked, 0) << "the host has an address besides loopback";
}

TEST_F(NetE2ePortsTest, LivePortAddAndRemove) {
  NetSession* s = Session();
  ASSERT_NE(s, nullptr) << W().SessionError(kPortsProfile);
  const std::string banner = absl::StrCat(kBanner, "\n");
  const uint16_t live = FreeHostPort();
  const std::string spec = absl::StrCat("127.0.0.1:", live, ":", kSandboxPort);
  CommandResult add = Lazaret("/", {"port", s->id(), "add", spec});
  ASSERT_EQ(add.exit_code, 0) << add.out << add.err;
  EXPECT_NE(add.out.find(absl::StrCat("127.0.0.1 port ", live, " -> sandbox port 3000")),
            std::string::npos)
      << add.out;
  const auto added = std::chrono::steady_clock::now();
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.1", live), banner);
  EXPECT_LT(std::chrono::steady_clock::now() - added, std::chrono::seconds(1));
  EXPECT_EQ(test::ReadTcpUntilEof("::1", live), "<refused>") << "only the address written";
  CommandResult ls = Lazaret("/", {"port", s->id(), "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_NE(ls.out.find(absl::StrCat("127.0.0.1 and ::1 port ", ProfileHostPort())),
            std::string::npos)
      << ls.out;
  // A busy host port is an error, and nothing changes.
  CommandResult busy =
      Lazaret("/", {"port", s->id(), "add", absl::StrCat(live, ":", kSandboxPort)});
  EXPECT_NE(busy.exit_code, 0) << busy.out;
  CommandResult rm = Lazaret("/", {"port", s->id(), "rm", std::to_string(live)});
  ASSERT_EQ(rm.exit_code, 0) << rm.out << rm.err;
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.1", live), "<refused>");
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.1", ProfileHostPort()), banner)
      << "the profile's forward stays";
  // Privileged host ports are refused before anything is asked.
  CommandResult low = Lazaret("/", {"port", s->id(), "add", "80:3000"});
  EXPECT_EQ(low.exit_code, 2) << low.out << low.err;
}

TEST_F(NetE2ePortsTest, PortsGoneWhenSessionEnds) {
  const uint16_t host = FreeHostPort();
  ASSERT_TRUE(W().AddProfile("netportsend", absl::StrCat("egress = \"open\"\nports = [\"", host,
                                                         ":", kSandboxPort, "\"]\n"))
                  .ok());
  absl::StatusOr<std::unique_ptr<NetSession>> s = W().StartSession("netportsend");
  ASSERT_TRUE(s.ok()) << s.status();
  // Nothing listens inside: the host accepts, the router finds no server
  // and the connection closes empty - but the host port is open.
  EXPECT_EQ(test::ReadTcpUntilEof("127.0.0.1", host), "");
  s->reset();  // the session ends
  EXPECT_EQ(ReadUntil("127.0.0.1", host, "<refused>"), "<refused>");
}

}  // namespace
}  // namespace lazaret::test::e2e::net
