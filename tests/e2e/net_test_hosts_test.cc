// The network e2e tests' test hosts (net_test_hosts.h) on their own: built,
// reachable from the host on every address over TCP and UDP, recorded by
// address, and gone afterwards, leftovers of an earlier run included. Runs
// as root; sends nothing but to the addresses it builds.
#include "tests/e2e/net_test_hosts.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>

#include "tests/e2e/net_e2e_hosts.h"
#include "tests/support/test_support.h"

namespace lazaret::test::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 0 when a TCP connect (or a UDP echo) to address:port from this process
// worked, else the errno.
int Reach(const std::string& address, uint16_t port, bool udp) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (IsV6(address)) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    inet_pton(AF_INET6, address.c_str(), &in6->sin6_addr);
    len = sizeof(*in6);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&ss);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(port);
    inet_pton(AF_INET, address.c_str(), &in4->sin_addr);
    len = sizeof(*in4);
  }
  const int fd = socket(ss.ss_family, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
  int err = connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0 ? 0 : errno;
  if (err == 0 && udp) {
    const char ping[] = "ping";
    send(fd, ping, 4, 0);
    pollfd p{fd, POLLIN, 0};
    char buf[8] = {};
    if (poll(&p, 1, 2000) != 1) {
      err = ETIMEDOUT;
    } else if (recv(fd, buf, sizeof(buf), 0) != 4 || memcmp(buf, ping, 4) != 0) {
      err = EBADMSG;
    }
  }
  close(fd);
  return err;
}

std::string Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::Run(argv).out;
}

class NetTestHostsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(geteuid(), 0u) << "builds network namespaces: run as root"; }
};

TEST_F(NetTestHostsTest, EveryAddressAnswersTcpAndUdpAndIsRecordedByAddress) {
  absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(net::NetTestHostSpecs());
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  for (const char* name : {"pub", "priv", "sub", "lan4", "lan6"}) {
    const TestHost* host = (*hosts)->Find(name);
    ASSERT_NE(host, nullptr) << name;
    for (const auto& a : host->Addresses()) {
      EXPECT_THAT(Ip({"route", "get", a}), HasSubstr("dev lztn-" + std::string(name) + "-h"));
      EXPECT_EQ(Reach(a, kTestPort, false), 0) << a << ": " << strerror(Reach(a, kTestPort, false));
      EXPECT_EQ(Reach(a, kTestPort, true), 0) << a << " (udp)";
      EXPECT_TRUE(host->listeners().WaitForCount(a, false, 1)) << a;
      EXPECT_GE(host->listeners().CountTo(a, true), 1u) << a;
    }
  }
  // A contact is recorded under the address it went to, nothing else.
  const TestHost* priv = (*hosts)->Find("priv");
  const size_t before = priv->listeners().CountTo(net::kPrivate172);
  const size_t nat64 = priv->listeners().CountTo(net::kNat64Private);
  ASSERT_EQ(Reach(net::kNat64Private, kTestPort, false), 0);
  EXPECT_TRUE(priv->listeners().WaitForCount(net::kNat64Private, false, nat64 + 1));
  EXPECT_EQ(priv->listeners().CountTo(net::kPrivate172), before);
  EXPECT_EQ((*hosts)->Find("nope"), nullptr);
}

TEST_F(NetTestHostsTest, HostSideAddressesAreHostInterfaceAddresses) {
  absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(net::NetTestHostSpecs());
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  const std::vector<std::string> mine = HostInterfaceAddresses();
  for (const char* a : {net::kPublicHostSide, net::kSubnetHostSide, "2001:db8:51::1"}) {
    EXPECT_NE(std::find(mine.begin(), mine.end(), a), mine.end()) << a;
  }
  for (const auto& a : mine) {
    EXPECT_THAT(a, Not(HasSubstr("127.0.0.")));
    EXPECT_NE(a, "::1");
    EXPECT_NE(a.rfind("fe80:", 0), 0u) << a;
  }
}

// The routes the host holds through a test host's link that carry no
// gateway and are not local: the prefixes it is directly connected to.
std::string OnLinkRoutes(const std::string& link) {
  std::string out;
  for (const char* family : {"-4", "-6"}) {
    std::istringstream lines(Ip({family, "-o", "route", "show", "table", "all", "dev", link}));
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("local ", 0) == 0 || line.rfind("multicast ", 0) == 0 ||
          line.rfind("broadcast ", 0) == 0 || line.rfind("fe80::", 0) == 0 ||
          line.find(" via ") != std::string::npos) {
        continue;
      }
      out += line.substr(0, line.find(' ')) + "\n";
    }
  }
  return out;
}

TEST_F(NetTestHostsTest, PublicHostsAreBehindAGatewayAndTheLanIsOnLink) {
  absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(net::NetTestHostSpecs());
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  const std::string pub = OnLinkRoutes("lztn-pub-h");
  EXPECT_THAT(pub, HasSubstr("10.210.0.0/24"));
  EXPECT_THAT(pub, Not(HasSubstr("198.51.100.")));
  EXPECT_THAT(pub, Not(HasSubstr("2001:db8:51")));
  for (const auto& a : (*hosts)->Find("pub")->Addresses()) {
    if (a.rfind("10.210.", 0) == 0 || a.rfind("fd42:210:", 0) == 0) continue;
    EXPECT_THAT(Ip({"route", "get", a}), HasSubstr(" via ")) << a;
  }
  EXPECT_THAT(OnLinkRoutes("lztn-priv-h"), Not(HasSubstr("10.203.")));
  EXPECT_THAT(OnLinkRoutes("lztn-lan4-h"), HasSubstr(std::string(net::kLan4Cidr) + "\n"));
  EXPECT_THAT(OnLinkRoutes("lztn-lan6-h"), HasSubstr(std::string(net::kLan6Cidr) + "\n"));
  const std::vector<std::string> mine = HostInterfaceAddresses();
  for (const char* a : {net::kLan4HostSide, net::kLan6HostSide, "10.210.0.1"}) {
    EXPECT_NE(std::find(mine.begin(), mine.end(), a), mine.end()) << a;
  }
}

TEST_F(NetTestHostsTest, HostAddressesAndPrefixesChangeWhileTheHostsRun) {
  absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(net::NetTestHostSpecs());
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  const TestHost& pub = *(*hosts)->Find("pub");
  absl::StatusOr<std::unique_ptr<Listeners>> l = Listeners::Start("", {"0.0.0.0", "::"}, 0);
  ASSERT_TRUE(l.ok()) << l.status();
  for (const char* a : {net::kLateV4, net::kLateV6}) {
    ASSERT_TRUE(pub.AddHostAddress(a).ok()) << a;
    const std::vector<std::string> mine = HostInterfaceAddresses();
    EXPECT_NE(std::find(mine.begin(), mine.end(), a), mine.end()) << a;
    EXPECT_EQ(Reach(a, (*l)->port(), false), 0) << a;
    EXPECT_TRUE((*l)->WaitForCount(a, false, 1)) << a;
    EXPECT_THAT(OnLinkRoutes(pub.host_link()), Not(HasSubstr(std::string(a) + "/")));
    ASSERT_TRUE(pub.DelHostAddress(a).ok()) << a;
    const std::vector<std::string> after = HostInterfaceAddresses();
    EXPECT_EQ(std::find(after.begin(), after.end(), a), after.end()) << a;
  }
  const std::pair<const char*, const char*> mids[] = {{net::kMidPrefixV4, net::kMidV4},
                                                      {net::kMidPrefixV6, net::kMidV6}};
  for (const auto& [prefix, address] : mids) {
    ASSERT_TRUE(pub.AddOnLinkPrefix(prefix).ok()) << prefix;
    EXPECT_THAT(OnLinkRoutes(pub.host_link()), HasSubstr(std::string(prefix) + "\n"));
    // The /32 (/128) through the gateway still carries the traffic.
    EXPECT_EQ(Reach(address, kTestPort, false), 0) << address;
    ASSERT_TRUE(pub.DelOnLinkPrefix(prefix).ok()) << prefix;
    EXPECT_THAT(OnLinkRoutes(pub.host_link()), Not(HasSubstr(prefix)));
  }
  EXPECT_FALSE(pub.DelOnLinkPrefix(net::kMidPrefixV4).ok());
}

TEST_F(NetTestHostsTest, SocketsMadeInsideBelongToTheTestHost) {
  absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(net::NetTestHostSpecs());
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  std::unique_ptr<Listeners> inside;
  ASSERT_TRUE((*hosts)
                  ->Find("pub")
                  ->RunInside([&] {
                    absl::StatusOr<std::unique_ptr<Listeners>> l =
                        Listeners::Start("", {net::kDnsServer}, 53);
                    ASSERT_TRUE(l.ok()) << l.status();
                    inside = std::move(*l);
                  })
                  .ok());
  ASSERT_NE(inside, nullptr);
  EXPECT_EQ(Reach(net::kDnsServer, 53, true), 0);
  EXPECT_EQ(inside->CountTo(net::kDnsServer, true), 1u);
  EXPECT_EQ((*hosts)->Find("pub")->listeners().CountTo(net::kDnsServer, true), 0u);
}

TEST_F(NetTestHostsTest, HostListenerAnswersOnEveryHostAddress) {
  absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(net::NetTestHostSpecs());
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  absl::StatusOr<std::unique_ptr<Listeners>> l = Listeners::Start("", {"0.0.0.0", "::"}, 0);
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_NE((*l)->port(), 0);
  for (const auto& a : HostInterfaceAddresses()) {
    EXPECT_EQ(Reach(a, (*l)->port(), false), 0) << a;
    EXPECT_TRUE((*l)->WaitForCount(a, false, 1)) << a;
    EXPECT_EQ((*l)->CountTo(a), 1u) << a;
  }
}

TEST_F(NetTestHostsTest, EverythingIsRemovedAndLeftoversAreCleared) {
  ASSERT_EQ(test::Run({"ip", "netns", "add", "lztn-leftover"}).exit_code, 0);
  ASSERT_EQ(
      test::Run({"ip", "link", "add", "lztn-left-h", "type", "veth", "peer", "name", "lztn-left-n"})
          .exit_code,
      0);
  {
    absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(net::NetTestHostSpecs());
    ASSERT_TRUE(hosts.ok()) << hosts.status();
    EXPECT_THAT(Ip({"netns", "list"}), Not(HasSubstr("lztn-leftover")));
    EXPECT_THAT(Ip({"link", "show"}), Not(HasSubstr("lztn-left-h")));
    EXPECT_THAT(Ip({"netns", "list"}), HasSubstr("lztn-pub"));
  }
  EXPECT_THAT(Ip({"netns", "list"}), Not(HasSubstr(kTestHostPrefix)));
  EXPECT_THAT(Ip({"link", "show"}), Not(HasSubstr(kTestHostPrefix)));
  EXPECT_THAT(Ip({"-4", "route", "show"}), Not(HasSubstr(kTestHostPrefix)));
  EXPECT_THAT(Ip({"-6", "route", "show"}), Not(HasSubstr(kTestHostPrefix)));
  EXPECT_THAT(Ip({"addr", "show"}), Not(HasSubstr("198.51.100.1")));
}

TEST_F(NetTestHostsTest, AFailingBuildRemovesWhatItBuilt) {
  std::vector<TestHostSpec> specs = net::NetTestHostSpecs();
  specs.push_back({.name = "bad", .host_v4 = "10.205.0.1/24", .addresses = {"not-an-address/24"}});
  absl::StatusOr<std::unique_ptr<TestHosts>> hosts = TestHosts::Create(specs);
  EXPECT_FALSE(hosts.ok());
  EXPECT_THAT(std::string(hosts.status().message()), HasSubstr("not-an-address"));
  EXPECT_THAT(Ip({"netns", "list"}), Not(HasSubstr(kTestHostPrefix)));
  EXPECT_THAT(Ip({"link", "show"}), Not(HasSubstr(kTestHostPrefix)));
}

}  // namespace
}  // namespace lazaret::test::e2e
