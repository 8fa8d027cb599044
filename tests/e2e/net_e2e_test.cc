// The egress policy end to end, by address: a real `lazaret run` session
// (runsc sandbox in the runc sidecar's namespace, policy applied by
// lazaret-netpolicyd through lazaret-netrouter) and the static probe
// inside it, against test hosts in network namespaces of this machine
// (net_e2e_hosts.h). Every refusal must be EACCES within a second, and the
// test host the connect was aimed at must have seen nothing. The same
// binary runs rootful and rootless (LAZARET_E2E_MODE); one session per
// profile shape is shared by the tests (net_e2e_world.h). Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/net_e2e_fixture.h"

namespace lazaret::test::e2e::net {
namespace {

using ::testing::HasSubstr;

class NetEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    NetWorld::Destroy();
    EXPECT_TRUE(test::WaitFor([] { return SessionContainers().empty(); }, std::chrono::seconds(60)))
        << "containers left behind";
    EXPECT_THAT(test::Run({"ip", "netns", "list"}).out, testing::Not(HasSubstr(kTestHostPrefix)));
  }
};
::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new NetEnvironment);

TEST_F(NetE2eTest, ResolvConfNamesOnlyTheRouter) {
  for (NetSession* s : {Pub(), Names()}) {
    ASSERT_NE(s, nullptr) << PubError() << NamesError();
    CommandResult r = s->Exec({"cat", "/etc/resolv.conf"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Trim(r.out), kRouterResolvConf);
  }
}

TEST_F(NetE2eTest, AllowedHostIsReachableOverIpv4AndIpv6) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const Listeners& pub = W().host("pub").listeners();
  const size_t v4 = pub.CountTo(kPublicV4), v6 = pub.CountTo(kPublicV6);
  const size_t v4_udp = pub.CountTo(kPublicV4, true);
  auto r = s->Probes({{"v4", {"connect", kPublicV4, kPort}},
                      {"v6", {"connect", kPublicV6, kPort}},
                      {"v4-udp", {"connect", kPublicV4, kPort, "--udp"}}});
  EXPECT_CONNECTS(r["v4"], kPublicV4);
  EXPECT_CONNECTS(r["v6"], kPublicV6);
  EXPECT_CONNECTS(r["v4-udp"], "udp echo");
  // And they really reached the test host, not something on the way.
  EXPECT_TRUE(pub.WaitForCount(kPublicV4, false, v4 + 1));
  EXPECT_TRUE(pub.WaitForCount(kPublicV6, false, v6 + 1));
  EXPECT_TRUE(pub.WaitForCount(kPublicV4, true, v4_udp + 1));
}

struct Denied {
  const char* label;
  std::string address;
  std::string port;
  std::vector<std::string> extra;
};

TEST_F(NetE2eTest, EveryDeniedClassIsRefusedFast) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const std::vector<Denied> denied = {
      {"private-10", kPrivate10, kPort, {}},
      {"private-10-udp", kPrivate10, kPort, {"--udp"}},
      {"private-192", kPrivate192, kPort, {}},
      {"ula", kPrivateUla, kPort, {}},
      {"metadata", kMetadata, kPort, {}},
      {"metadata-v6", kMetadataV6, kPort, {}},
      {"metadata-cgnat", kMetadataCgnat, kPort, {}},
      {"mapped", kMappedPrivate, kPort, {}},
      {"nat64", kNat64Private, kPort, {}},
      {"6to4", kSixToFourPrivate, kPort, {}},
      {"connected-subnet", "10.0.2.50", kPort, {}},
      {"gateway", "10.0.2.2", kPort, {}},
      {"gateway-v6-link-local", "fe80::2%tap0", kPort, {}},
      {"slirp-v6-gateway", "fd00::2", kPort, {}},
      // Route decisions only: nothing is sent to slirp's DNS forwarder.
      {"slirp-dns", "10.0.2.3", "53", {"--udp", "--connect-only"}},
      {"slirp-dns-v6", "fd00::3", "53", {"--udp", "--connect-only"}},
  };
  const Listeners& priv = W().host("priv").listeners();
  const size_t seen_before = priv.CountTo("") + priv.CountTo("", true);
  std::vector<ProbeCall> calls;
  for (const auto& d : denied) {
    std::vector<std::string> args = {"connect", d.address, d.port};
    args.insert(args.end(), d.extra.begin(), d.extra.end());
    calls.push_back({d.label, args});
  }
  auto r = s->Probes(calls);
  for (const auto& d : denied) {
    EXPECT_REFUSED_FAST(r[d.label], d.label);
  }
  // Nothing reached the private test host, whatever form named it.
  EXPECT_EQ(priv.CountTo("") + priv.CountTo("", true), seen_before);
}

// Every address of the host's interfaces, a listener bound to 0.0.0.0 and
// [::] on the host, and some of these addresses inside allowed ranges
// (198.51.100.1 in the public default, 10.204.0.1 in allow_egress).
TEST_F(NetE2eTest, EveryHostAddressIsRefusedEvenInsideAnAllowedRange) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const std::vector<std::string> addresses = HostInterfaceAddresses();
  ASSERT_THAT(addresses, testing::Contains(std::string(kPublicHostSide)));
  ASSERT_THAT(addresses, testing::Contains(std::string(kSubnetHostSide)));
  const std::string port = std::to_string(W().host_listener().port());
  std::vector<ProbeCall> calls;
  for (size_t i = 0; i < addresses.size(); ++i) {
    calls.push_back({"a" + std::to_string(i), {"connect", addresses[i], port}});
    calls.push_back({"u" + std::to_string(i), {"connect", addresses[i], port, "--udp"}});
  }
  auto r = s->Probes(calls);
  for (size_t i = 0; i < addresses.size(); ++i) {
    EXPECT_REFUSED_FAST(r["a" + std::to_string(i)], addresses[i]);
    EXPECT_REFUSED_FAST(r["u" + std::to_string(i)], addresses[i] + " (udp)");
  }
  EXPECT_EQ(W().host_listener().CountTo(""), 0u);
  EXPECT_EQ(W().host_listener().CountTo("", true), 0u);
}

TEST_F(NetE2eTest, NarrowAllowInsideABroadDenyOpensOnlyThatHost) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  auto r = s->Probes({{"narrow", {"connect", kPrivateNarrow, kPort}},
                      {"neighbour", {"connect", kPrivate10, kPort}},
                      {"subnet", {"connect", kSubnetHost, kPort}},
                      {"subnet-host-side", {"connect", kSubnetHostSide, kPort}}});
  EXPECT_CONNECTS(r["narrow"], "allow_egress 10.203.0.3/32");
  EXPECT_REFUSED_FAST(r["neighbour"], "10.203.0.2 beside the /32");
  EXPECT_CONNECTS(r["subnet"], "allow_egress 10.204.0.0/24");
  EXPECT_REFUSED_FAST(r["subnet-host-side"], "the host's own 10.204.0.1");
  EXPECT_TRUE(W().host("priv").listeners().WaitForCount(kPrivateNarrow, false, 1));
  EXPECT_EQ(W().host("priv").listeners().CountTo(kPrivate10), 0u);
}

TEST_F(NetE2eTest, AtEqualPrefixDenyWins) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  // 172.20.99.0/24 is both in allow_egress and in default_deny.
  EXPECT_REFUSED_FAST(s->Probe({"connect", kPrivate172, kPort}),
                      "172.20.99.0/24 allowed and denied");
  EXPECT_EQ(W().host("priv").listeners().CountTo(kPrivate172), 0u);
  CommandResult t = LazaretNet({"test", s->id(), std::string(kPrivate172) + ":" + kPort});
  EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
}

// SO_MARK, SO_BINDTODEVICE (tap0 and lo), SO_DONTROUTE and another uid
// are all accepted inside; none may reach a denied host or a resolver
// other than the router.
TEST_F(NetE2eTest, MarkDeviceDontrouteAndUidTricksReachNothingDenied) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const std::vector<std::pair<std::string, std::vector<std::string>>> tricks = {
      {"mark", {"--mark", "1"}},
      {"mark-max", {"--mark", "4294967295"}},
      {"dev-tap0", {"--bind-dev", "tap0"}},
      {"dev-lo", {"--bind-dev", "lo"}},
      {"dontroute", {"--dontroute"}},
      {"uid", {"--uid", "1000"}},
      {"all", {"--mark", "7", "--bind-dev", "tap0", "--dontroute", "--uid", "1000"}},
  };
  const int dns_before = W().dns().TotalQueries();
  const size_t priv_before = W().host("priv").listeners().CountTo("");
  std::vector<ProbeCall> calls;
  for (const auto& [name, opts] : tricks) {
    auto with = [&](std::vector<std::string> args) {
      args.insert(args.end(), opts.begin(), opts.end());
      args.push_back("--timeout-ms");
      args.push_back("1500");
      return args;
    };
    calls.push_back({name + ":private", with({"connect", kPrivate10, kPort})});
    calls.push_back({name + ":dns-tcp", with({"connect", kDnsServer, "53"})});
    calls.push_back({name + ":dot", with({"connect", kDnsServer, "853"})});
    calls.push_back({name + ":dns-udp", with({"dns", kNameBypass, "--server", kDnsServer})});
    // slirp's forwarder relays whatever reaches it to this machine's own
    // resolver, off the machine: only a route decision is asked of it
    // (UDP connect, nothing sent). Bound to a device, connect() succeeds
    // whatever the route (the kernel assumes the destination is on-link),
    // so the bound tricks are judged by the neighbour table below.
    if (name.rfind("dev-", 0) != 0 && name != "all") {
      calls.push_back(
          {name + ":slirp-dns", with({"connect", "10.0.2.3", "53", "--udp", "--connect-only"})});
    }
  }
  // In parallel: a bound connect fails by timing out.
  auto r = s->Probes(calls, /*parallel=*/true);
  for (const auto& [label, result] : r) {
    const bool bound = label.rfind("dev-", 0) == 0 || label.rfind("all:", 0) == 0;
    if (!bound && !result.optfail) {
      EXPECT_REFUSED_FAST(result, label);
      continue;
    }
    // Bound to a device: refused, unreachable or timed out, never through;
    // a reset from the far end would mean the packet got there.
    EXPECT_TRUE(result.parsed) << label << ": " << result.line;
    EXPECT_FALSE(result.ok) << label << " got through: " << result.line;
    EXPECT_NE(result.error, "ECONNREFUSED") << label << " reached its host: " << result.line;
  }
  // Another uid as podman exec sets it, not the probe itself.
  EXPECT_REFUSED_FAST(s->Probe({"connect", kPrivate10, kPort}, "1000:1000"), "exec --user 1000");
  EXPECT_EQ(W().dns().TotalQueries(), dns_before) << W().dns().CountsText();
  EXPECT_EQ(W().host("priv").listeners().CountTo(""), priv_before);
  // A bound socket reaches only neighbours the namespace already knows:
  // the gateways, made permanent by the router, and slirp's IPv6 address
  // fd00::2, which the kernel learns from slirp's own neighbour
  // solicitations (no probe needed; slirp refuses every connection to it,
  // allow_host_loopback=false). Nothing is resolved on demand (no probes of
  // any kind on tap0), so slirp's DNS forwarders are unreachable however a
  // socket is bound.
  CommandResult neigh = s->RouterIp({"neigh", "show", "dev", "tap0"});
  std::istringstream entries(neigh.out);
  for (std::string e; std::getline(entries, e);) {
    if (e.find("lladdr") == std::string::npos) continue;
    const std::string address = e.substr(0, e.find(' '));
    if (address == "10.0.2.2" || address == "fe80::2") {
      EXPECT_THAT(e, HasSubstr("PERMANENT")) << "a gateway not pinned: " << e;
    } else {
      EXPECT_EQ(address, "fd00::2") << "a neighbour resolved on tap0: " << e;
    }
  }
  for (const char* f : {"ipv4/neigh/tap0/mcast_solicit", "ipv4/neigh/tap0/ucast_solicit",
                        "ipv4/neigh/tap0/app_solicit", "ipv6/neigh/tap0/mcast_solicit",
                        "ipv6/neigh/tap0/ucast_solicit", "ipv6/neigh/tap0/app_solicit"}) {
    EXPECT_EQ(s->RouterSysctl(f), "0") << f;
  }
}

TEST_F(NetE2eTest, NoResolverButTheRouterIsReachable) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const int before = W().dns().QueryCount(kNameBypass);
  auto r = s->Probes({{"udp", {"dns", kNameBypass, "--server", kDnsServer}},
                      {"tcp", {"dns", kNameBypass, "--server", kDnsServer, "--tcp"}},
                      {"tcp53", {"connect", kDnsServer, "53"}},
                      {"dot", {"connect", kDnsServer, "853"}},
                      {"v6", {"connect", kPublicV6, "53"}},
                      {"v6-udp", {"connect", kPublicV6, "53", "--udp", "--connect-only"}},
                      {"router", {"dns", kNameFree}}});
  for (const char* label : {"udp", "tcp", "tcp53", "dot", "v6", "v6-udp"}) {
    EXPECT_REFUSED_FAST(r[label], label);
  }
  EXPECT_EQ(W().dns().QueryCount(kNameBypass), before) << W().dns().CountsText();
  // The router itself answers (this profile lets every name resolve).
  EXPECT_EQ(r["router"].rcode, "NOERROR") << r["router"].line;
  EXPECT_TRUE(HasAnswer(r["router"], kPublicV4)) << r["router"].line;
}

}  // namespace
}  // namespace lazaret::test::e2e::net
