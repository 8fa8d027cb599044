#include "services/netpolicyd/host_networks.h"

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <string>

#include "gtest/gtest.h"

namespace lazaret::netpolicyd {
namespace {

RouteRecord Route(const std::string& dst, const std::string& oif, uint8_t type = RTN_UNICAST,
                  uint32_t table = RT_TABLE_MAIN, bool gateway = false) {
  RouteRecord r;
  r.dst = *IpPrefix::Parse(dst);
  r.oif_name = oif;
  r.type = type;
  r.table = table;
  r.has_gateway = gateway;
  r.scope = gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
  return r;
}

AddrRecord Addr(const std::string& address, const std::string& ifname, uint32_t flags = 0) {
  return {*IpPrefix::ParseAddress(address), ifname, flags};
}

std::vector<std::string> OnLinkCidrs(const HostNetworks& h) {
  std::vector<std::string> out;
  for (const auto& n : h.on_link) {
    out.push_back(n.prefix.ToString() + " " + n.interface + " " + RouteTableName(n.table));
  }
  return out;
}

TEST(HostNetworksTest, OnLinkRouteInAnyTableIsAHostNetwork) {
  HostNetworks h = ExtractHostNetworks(
      {}, {Route("192.0.2.0/24", "eth0"), Route("2001:db8:23::/64", "eth0"),
           Route("10.66.0.0/16", "wg0", RTN_UNICAST, 51820), Route("10.88.0.0/16", "cni0")});
  EXPECT_EQ(OnLinkCidrs(h),
            (std::vector<std::string>{"10.66.0.0/16 wg0 51820", "10.88.0.0/16 cni0 main",
                                      "192.0.2.0/24 eth0 main", "2001:db8:23::/64 eth0 main"}));
  EXPECT_TRUE(h.skipped.empty());
}

TEST(HostNetworksTest, GatewayRouteIsNot) {
  HostNetworks h =
      ExtractHostNetworks({}, {Route("198.51.100.0/24", "eth0", RTN_UNICAST, RT_TABLE_MAIN, true),
                               Route("0.0.0.0/0", "eth0", RTN_UNICAST, RT_TABLE_MAIN, true),
                               Route("::/0", "eth0", RTN_UNICAST, RT_TABLE_MAIN, true)});
  EXPECT_TRUE(h.on_link.empty());
  EXPECT_TRUE(h.skipped.empty());
}

TEST(HostNetworksTest, PointToPointPeerIsOne) {
  HostNetworks h = ExtractHostNetworks({}, {Route("10.8.0.1/32", "tun0")});
  EXPECT_EQ(OnLinkCidrs(h), std::vector<std::string>{"10.8.0.1/32 tun0 main"});
}

TEST(HostNetworksTest, DefaultAndTunnelCatchAllsAreSkippedAndListed) {
  HostNetworks h = ExtractHostNetworks(
      {}, {Route("0.0.0.0/0", "wg0", RTN_UNICAST, 51820), Route("0.0.0.0/1", "tun0"),
           Route("128.0.0.0/1", "tun0"), Route("::/1", "tun0"), Route("2000::/3", "tun0"),
           Route("10.0.0.0/8", "tun0"), Route("2001::/16", "tun0")});
  EXPECT_EQ(OnLinkCidrs(h),
            (std::vector<std::string>{"10.0.0.0/8 tun0 main", "2001::/16 tun0 main"}));
  ASSERT_EQ(h.skipped.size(), 5u);
  EXPECT_EQ(h.skipped[0].prefix.ToString(), "0.0.0.0/0");
  EXPECT_EQ(h.skipped[0].interface, "wg0");
  EXPECT_NE(h.skipped[0].reason.find("default route"), std::string::npos);
  EXPECT_EQ(h.skipped[1].prefix.ToString(), "0.0.0.0/1");
  EXPECT_NE(h.skipped[1].reason.find("catch-all"), std::string::npos);
}

TEST(HostNetworksTest, TentativeAndTemporaryAddressesCount) {
  HostNetworks h = ExtractHostNetworks(
      {Addr("2001:db8:23::5", "eth0", IFA_F_TENTATIVE),
       Addr("2001:db8:23::99", "eth0", IFA_F_TEMPORARY | IFA_F_DEPRECATED), Addr("127.0.0.1", "lo"),
       Addr("192.0.2.2", "eth0"), Addr("192.0.2.2", "eth0")},
      {});
  ASSERT_EQ(h.addresses.size(), 4u);
  EXPECT_EQ(h.addresses[0].address.ToString(), "127.0.0.1/32");
  EXPECT_EQ(h.addresses[1].address.ToString(), "192.0.2.2/32");
  EXPECT_EQ(h.addresses[2].address.ToString(), "2001:db8:23::5/128");
  EXPECT_EQ(h.addresses[3].address.ToString(), "2001:db8:23::99/128");
}

TEST(HostNetworksTest, LocalBroadcastMulticastTypesIgnored) {
  HostNetworks h = ExtractHostNetworks(
      {}, {Route("192.0.2.2/32", "eth0", RTN_LOCAL, RT_TABLE_LOCAL),
           Route("192.0.2.255/32", "eth0", RTN_BROADCAST, RT_TABLE_LOCAL),
           Route("ff00::/8", "eth0", RTN_MULTICAST, RT_TABLE_LOCAL),
           Route("2001:db8:23::/128", "eth0", RTN_ANYCAST, RT_TABLE_LOCAL),
           Route("198.18.0.0/15", "", RTN_BLACKHOLE), Route("198.20.0.0/16", "", RTN_UNREACHABLE),
           Route("fe80::/64", "eth0")});
  EXPECT_TRUE(h.on_link.empty());
  EXPECT_TRUE(h.skipped.empty());
}

TEST(HostNetworksTest, SameHostGivesEqualSnapshotsWhateverTheOrder) {
  const std::vector<AddrRecord> a = {Addr("192.0.2.2", "eth0"), Addr("fd00::2", "eth0")};
  const std::vector<AddrRecord> b = {Addr("fd00::2", "eth0"), Addr("192.0.2.2", "eth0")};
  const std::vector<RouteRecord> r1 = {Route("192.0.2.0/24", "eth0"), Route("fd00::/64", "eth0")};
  const std::vector<RouteRecord> r2 = {Route("fd00::/64", "eth0"), Route("192.0.2.0/24", "eth0")};
  EXPECT_EQ(ExtractHostNetworks(a, r1), ExtractHostNetworks(b, r2));
  EXPECT_FALSE(ExtractHostNetworks(a, r1) == ExtractHostNetworks(a, {}));
}

}  // namespace
}  // namespace lazaret::netpolicyd
