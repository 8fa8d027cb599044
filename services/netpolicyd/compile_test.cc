#include "services/netpolicyd/compile.h"

#include <string>

#include "gtest/gtest.h"
#include "services/common/fs/sha256.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;
namespace rt = ::lazaret::netrouter::v1;
namespace cfg = ::lazaret::config::v1;

class CompileTest : public ::testing::Test {
 protected:
  void Allow(const std::string& cidr, uint32_t line = 1) {
    Entry(in_.network.add_allow(), cidr, line);
  }
  void Deny(const std::string& cidr, uint32_t line = 1) {
    Entry(in_.network.add_deny(), cidr, line);
  }
  void Live(const std::string& cidr, pb::RuleAction action, int64_t expires = 0) {
    pb::Rule* r = &in_.live_rules.emplace_back();
    r->mutable_destination()->set_prefix(cidr);
    r->set_action(action);
    r->mutable_source()->set_expires_unix(expires);
  }
  void Domain(const std::string& pattern) {
    cfg::DomainEntry* d = in_.network.add_allow_domains();
    d->set_pattern(pattern);
    d->mutable_source()->set_key_path("profiles.x.allow_domains");
  }
  void NameRoute(const std::string& address, const std::string& name, int64_t expires) {
    in_.name_routes.push_back({*IpPrefix::ParseAddress(address), name, expires});
  }
  CompiledPolicy Compiled() {
    auto p = Compile(in_);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : CompiledPolicy();
  }
  static const pb::Rule& Decide(const CompiledPolicy& p, const std::string& address) {
    return p.Evaluate(*IpPrefix::ParseAddress(address));
  }
  static bool Allowed(const CompiledPolicy& p, const std::string& address) {
    return Decide(p, address).action() == pb::RULE_ACTION_ALLOW;
  }
  static const rt::Route* RouteFor(const CompiledPolicy& p, const std::string& cidr) {
    for (const auto& r : p.routes()) {
      if (r.destination().prefix() == cidr) return &r;
    }
    return nullptr;
  }

  void SetUp() override { in_.now_unix = 1000; }

  CompileInput in_;

 private:
  static void Entry(cfg::CidrEntry* e, const std::string& cidr, uint32_t line) {
    e->mutable_cidr()->set_prefix(cidr);
    e->mutable_source()->set_layer(lazaret::common::v1::CONFIG_LAYER_USER);
    e->mutable_source()->set_file("/home/u/.config/lazaret/config.toml");
    e->mutable_source()->set_line(line);
    e->mutable_source()->set_key_path("profiles.x.allow_egress");
  }
};

TEST_F(CompileTest, EmptyPolicyDeniesBothFamiliesByDefault) {
  CompiledPolicy p = Compiled();
  ASSERT_NE(RouteFor(p, "0.0.0.0/0"), nullptr);
  ASSERT_NE(RouteFor(p, "::/0"), nullptr);
  EXPECT_EQ(RouteFor(p, "0.0.0.0/0")->action(), rt::ROUTE_ACTION_PROHIBIT);
  EXPECT_EQ(RouteFor(p, "::/0")->action(), rt::ROUTE_ACTION_PROHIBIT);
  EXPECT_EQ(Decide(p, "93.184.216.34").source().kind(), pb::RULE_KIND_DEFAULT);
  EXPECT_EQ(Decide(p, "2001:db8::1").source().kind(), pb::RULE_KIND_DEFAULT);
  EXPECT_FALSE(p.names_unrestricted());
  EXPECT_EQ(p.next_expiry_unix(), 0);
}

TEST_F(CompileTest, AllowOfTheWholeSpaceIsTheDefaultRoute) {
  Allow("0.0.0.0/0");
  CompiledPolicy p = Compiled();
  EXPECT_EQ(RouteFor(p, "0.0.0.0/0")->action(), rt::ROUTE_ACTION_ALLOW);
  EXPECT_EQ(RouteFor(p, "::/0")->action(), rt::ROUTE_ACTION_PROHIBIT);
  EXPECT_TRUE(Allowed(p, "93.184.216.34"));
  EXPECT_EQ(Decide(p, "93.184.216.34").source().kind(), pb::RULE_KIND_CONFIG);
  EXPECT_TRUE(p.names_unrestricted());
  // One route per prefix: the shadowed default is a rule, not a route.
  int defaults = 0;
  for (const auto& r : p.routes()) defaults += r.destination().prefix() == "0.0.0.0/0";
  EXPECT_EQ(defaults, 1);
}

TEST_F(CompileTest, AtEqualPrefixDenyWins) {
  Allow("10.0.0.0/8", 3);
  Deny("10.0.0.0/8", 7);
  CompiledPolicy p = Compiled();
  EXPECT_EQ(RouteFor(p, "10.0.0.0/8")->action(), rt::ROUTE_ACTION_PROHIBIT);
  EXPECT_EQ(Decide(p, "10.9.9.9").source().line(), 7u);
  // Shown in evaluation order: the winner first, the shadowed allow next.
  for (size_t i = 0; i + 1 < p.rules().size(); ++i) {
    if (p.rules()[i].destination().prefix() == "10.0.0.0/8") {
      EXPECT_EQ(p.rules()[i].action(), pb::RULE_ACTION_DENY);
      EXPECT_EQ(p.rules()[i + 1].destination().prefix(), "10.0.0.0/8");
      EXPECT_EQ(p.rules()[i + 1].action(), pb::RULE_ACTION_ALLOW);
      break;
    }
  }
}

TEST_F(CompileTest, NarrowAllowInsideBroadDenyOpensOnlyThatHost) {
  Allow("0.0.0.0/0");
  Deny("10.0.0.0/8");
  Allow("10.1.2.3/32");
  CompiledPolicy p = Compiled();
  EXPECT_TRUE(Allowed(p, "10.1.2.3"));
  EXPECT_FALSE(Allowed(p, "10.1.2.4"));
  EXPECT_TRUE(Allowed(p, "11.0.0.1"));
}

TEST_F(CompileTest, RulesAreLongestPrefixFirst) {
  Allow("0.0.0.0/0");
  Deny("10.0.0.0/8");
  Allow("10.1.0.0/16");
  CompiledPolicy p = Compiled();
  int last_v4 = 33;
  for (const auto& r : p.rules()) {
    auto prefix = *IpPrefix::Parse(r.destination().prefix());
    if (!prefix.is_ipv4()) continue;
    EXPECT_LE(prefix.length(), last_v4) << r.destination().prefix();
    last_v4 = prefix.length();
  }
}

TEST_F(CompileTest, HostAddressesInsideAnAllowedRangeStayDenied) {
  Allow("192.168.0.0/16");
  in_.host.addresses = {{"lo", *IpPrefix::ParseAddress("127.0.0.1")},
                        {"eth0", *IpPrefix::ParseAddress("192.168.1.5")},
                        {"eth0", *IpPrefix::ParseAddress("fd12::5")}};
  CompiledPolicy p = Compiled();
  EXPECT_TRUE(Allowed(p, "192.168.1.6"));
  EXPECT_FALSE(Allowed(p, "192.168.1.5"));
  EXPECT_EQ(Decide(p, "192.168.1.5").source().kind(), pb::RULE_KIND_HOST_ADDRESS);
  EXPECT_EQ(Decide(p, "192.168.1.5").source().detail(), "host interface eth0");
  EXPECT_EQ(Decide(p, "127.0.0.1").source().kind(), pb::RULE_KIND_HOST_ADDRESS);
  EXPECT_EQ(Decide(p, "fd12::5").source().kind(), pb::RULE_KIND_HOST_ADDRESS);
  EXPECT_EQ(Decide(p, "::ffff:192.168.1.5").source().kind(), pb::RULE_KIND_DERIVED);
  EXPECT_FALSE(Allowed(p, "::ffff:192.168.1.5"));
  EXPECT_TRUE(Allowed(p, "::ffff:192.168.1.6"));
}

TEST_F(CompileTest, ExactHostAllowOpensAnAlwaysDeniedAddressButNotAConfiguredDeny) {
  Allow("192.168.0.0/16");
  Allow("192.168.1.5/32");
  Allow("192.168.1.7/32");
  Deny("192.168.1.7/32");
  in_.host.addresses = {{"eth0", *IpPrefix::ParseAddress("192.168.1.5")},
                        {"eth1", *IpPrefix::ParseAddress("192.168.1.7")}};
  CompiledPolicy p = Compiled();
  EXPECT_TRUE(Allowed(p, "192.168.1.5"));
  EXPECT_TRUE(Allowed(p, "::ffff:192.168.1.5"));
  EXPECT_FALSE(Allowed(p, "192.168.1.7"));
  EXPECT_EQ(Decide(p, "192.168.1.7").source().kind(), pb::RULE_KIND_CONFIG);
}

TEST_F(CompileTest, GatewaysLinkServicesAndMetadataAreAlwaysDenied) {
  Allow("0.0.0.0/0");
  Allow("::/0");
  Allow("169.254.0.0/16");
  in_.namespace_info.add_gateways("10.0.2.2");
  in_.namespace_info.add_gateways("fe80::2%tap0");
  in_.namespace_info.add_link_services("10.0.2.3");
  in_.namespace_info.add_link_services("fd00::3");
  CompiledPolicy p = Compiled();
  EXPECT_EQ(Decide(p, "10.0.2.2").source().kind(), pb::RULE_KIND_GATEWAY);
  EXPECT_EQ(Decide(p, "10.0.2.3").source().kind(), pb::RULE_KIND_GATEWAY);
  EXPECT_EQ(Decide(p, "fe80::2").source().kind(), pb::RULE_KIND_GATEWAY);
  EXPECT_EQ(Decide(p, "fd00::3").source().kind(), pb::RULE_KIND_GATEWAY);
  EXPECT_TRUE(Allowed(p, "10.0.2.4"));
  // An allow of the link-local range opens none of it, the metadata host
  // included: only exact host allows open link-local addresses.
  EXPECT_FALSE(Allowed(p, "169.254.1.1"));
  EXPECT_EQ(Decide(p, "169.254.1.1").source().kind(), pb::RULE_KIND_ALWAYS);
  EXPECT_EQ(Decide(p, "169.254.169.254").source().kind(), pb::RULE_KIND_ALWAYS);
  EXPECT_EQ(Decide(p, "100.100.100.200").source().kind(), pb::RULE_KIND_ALWAYS);
  EXPECT_EQ(Decide(p, "fd00:ec2::254").source().kind(), pb::RULE_KIND_ALWAYS);
  EXPECT_EQ(Decide(p, "fe80::1234").source().kind(), pb::RULE_KIND_ALWAYS);
  EXPECT_FALSE(Allowed(p, "fe80::1234"));
}

TEST_F(CompileTest, InsideLinkLocalOnlyExactHostAllowsOpen) {
  Allow("169.254.7.0/24");
  Allow("169.254.9.9/32");
  Allow("169.254.169.254/32");
  Allow("fe80::/10");
  Allow("fe80::5/128");
  CompiledPolicy p = Compiled();
  EXPECT_FALSE(Allowed(p, "169.254.7.1")) << "a part of the range wider than one host";
  EXPECT_FALSE(Allowed(p, "::ffff:169.254.7.1"));
  EXPECT_TRUE(Allowed(p, "169.254.9.9"));
  EXPECT_TRUE(Allowed(p, "169.254.169.254")) << "the metadata address, named exactly";
  // IPv6 link-local: the router refuses it ahead of the table, so not even
  // an exact allow is shown as open.
  EXPECT_FALSE(Allowed(p, "fe80::1"));
  EXPECT_FALSE(Allowed(p, "fe80::5"));
  EXPECT_EQ(Decide(p, "fe80::5").source().kind(), pb::RULE_KIND_ALWAYS);
}

TEST_F(CompileTest, ExactAllowOpensTheGateway) {
  Allow("10.0.2.2/32");
  in_.namespace_info.add_gateways("10.0.2.2");
  CompiledPolicy p = Compiled();
  EXPECT_TRUE(Allowed(p, "10.0.2.2"));
  EXPECT_FALSE(Allowed(p, "10.0.2.3"));
}

TEST_F(CompileTest, EmbeddedIpv4FormsAreJudgedLikeTheIpv4Address) {
  Allow("0.0.0.0/0");
  Allow("::/0");
  Deny("10.0.0.0/8");
  CompiledPolicy p = Compiled();
  for (const char* denied : {"10.1.1.1", "::ffff:10.1.1.1", "64:ff9b::10.1.1.1", "2002:a01:101::1",
                             "2002:a01:101:ffff::"}) {
    EXPECT_FALSE(Allowed(p, denied)) << denied;
  }
  for (const char* allowed : {"8.8.8.8", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1"}) {
    EXPECT_TRUE(Allowed(p, allowed)) << allowed;
  }
  EXPECT_EQ(RouteFor(p, "::ffff:10.0.0.0/104")->action(), rt::ROUTE_ACTION_PROHIBIT);
  EXPECT_EQ(RouteFor(p, "64:ff9b::a00:0/104")->action(), rt::ROUTE_ACTION_PROHIBIT);
  EXPECT_EQ(RouteFor(p, "2002:a00::/24")->action(), rt::ROUTE_ACTION_PROHIBIT);
  const pb::Rule& mapped = Decide(p, "::ffff:10.1.1.1");
  EXPECT_EQ(mapped.source().kind(), pb::RULE_KIND_DERIVED);
  EXPECT_EQ(mapped.source().detail(), "IPv4-mapped form of 10.0.0.0/8");
  EXPECT_EQ(mapped.source().key_path(), "profiles.x.allow_egress");
}

TEST_F(CompileTest, AnExplicitIpv6DenyOfTheMappedRangeBeatsTheDerivedAllow) {
  Allow("0.0.0.0/0");
  Allow("::/0");
  Deny("::ffff:0:0/96");
  Allow("10.1.2.3/32");
  CompiledPolicy p = Compiled();
  EXPECT_FALSE(Allowed(p, "::ffff:8.8.8.8"));
  EXPECT_TRUE(Allowed(p, "::ffff:10.1.2.3"));  // the longer derived allow
}

TEST_F(CompileTest, LiveRulesTakeTheirPrefixPrecedenceAndExpire) {
  Allow("0.0.0.0/0");
  Allow("203.0.113.0/24");
  Live("203.0.113.0/24", pb::RULE_ACTION_DENY, 2000);
  Live("198.51.100.7/32", pb::RULE_ACTION_DENY);
  Live("10.7.0.0/16", pb::RULE_ACTION_ALLOW, 1500);
  Live("192.0.2.0/24", pb::RULE_ACTION_ALLOW, 900);  // already expired
  Deny("10.0.0.0/8");
  Deny("192.0.2.0/24");
  CompiledPolicy p = Compiled();
  EXPECT_FALSE(Allowed(p, "203.0.113.9"));
  EXPECT_EQ(Decide(p, "203.0.113.9").source().kind(), pb::RULE_KIND_LIVE);
  EXPECT_FALSE(Allowed(p, "198.51.100.7"));
  EXPECT_TRUE(Allowed(p, "10.7.1.1"));
  EXPECT_FALSE(Allowed(p, "10.8.1.1"));
  EXPECT_FALSE(Allowed(p, "192.0.2.1"));
  EXPECT_EQ(p.next_expiry_unix(), 1500);
  in_.now_unix = 1500;
  CompiledPolicy later = Compiled();
  EXPECT_FALSE(Allowed(later, "10.7.1.1"));
  EXPECT_EQ(later.next_expiry_unix(), 2000);
}

TEST_F(CompileTest, LiveAllowOpensAHostAddressOnlyWhenExact) {
  in_.host.addresses = {{"eth0", *IpPrefix::ParseAddress("192.168.1.5")}};
  Live("192.168.0.0/16", pb::RULE_ACTION_ALLOW);
  EXPECT_FALSE(Allowed(Compiled(), "192.168.1.5"));
  Live("192.168.1.5/32", pb::RULE_ACTION_ALLOW);
  EXPECT_TRUE(Allowed(Compiled(), "192.168.1.5"));
}

TEST_F(CompileTest, NameRoutesAreAdmittedOnlyOutsideExplicitAndAlwaysDenies) {
  Deny("10.0.0.0/8");
  Domain("*.example.test");
  in_.host.addresses = {{"eth0", *IpPrefix::ParseAddress("192.0.2.10")}};
  NameRoute("198.51.100.1", "api.example.test", 1300);
  NameRoute("2001:db8::1", "api.example.test", 1200);
  NameRoute("10.1.1.1", "api.example.test", 1300);         // rebinding into a deny
  NameRoute("192.0.2.10", "api.example.test", 1300);       // the host's own address
  NameRoute("169.254.169.254", "api.example.test", 1300);  // metadata
  NameRoute("198.51.100.2", "other.test", 1300);           // no longer answered
  NameRoute("198.51.100.3", "api.example.test", 1000);     // expired
  CompiledPolicy p = Compiled();
  EXPECT_TRUE(Allowed(p, "198.51.100.1"));
  EXPECT_EQ(Decide(p, "198.51.100.1").source().kind(), pb::RULE_KIND_NAME);
  EXPECT_EQ(Decide(p, "198.51.100.1").source().detail(), "api.example.test");
  EXPECT_EQ(Decide(p, "198.51.100.1").source().expires_unix(), 1300);
  EXPECT_TRUE(Allowed(p, "2001:db8::1"));
  for (const char* dropped :
       {"10.1.1.1", "192.0.2.10", "169.254.169.254", "198.51.100.2", "198.51.100.3"}) {
    EXPECT_FALSE(Allowed(p, dropped)) << dropped;
  }
  EXPECT_EQ(p.name_routes().size(), 2u);
  EXPECT_EQ(p.next_expiry_unix(), 1200);
  EXPECT_EQ(RouteFor(p, "198.51.100.1/32")->action(), rt::ROUTE_ACTION_ALLOW);
  EXPECT_EQ(RouteFor(p, "10.1.1.1/32"), nullptr);
  // The DNS filter's view: the deciding static rule.
  const pb::Rule* deciding = nullptr;
  EXPECT_FALSE(p.AdmitsNameAddress(*IpPrefix::ParseAddress("10.1.1.1"), &deciding));
  EXPECT_EQ(deciding->source().kind(), pb::RULE_KIND_CONFIG);
  EXPECT_TRUE(p.AdmitsNameAddress(*IpPrefix::ParseAddress("198.51.100.9"), &deciding));
  EXPECT_EQ(deciding->source().kind(), pb::RULE_KIND_DEFAULT);
}

TEST_F(CompileTest, NameRoutesOfADeniedNameAreDropped) {
  Domain("*.example.test");
  NameRoute("198.51.100.1", "api.example.test", 1300);
  pb::NameRule deny;
  deny.set_pattern("api.example.test");
  deny.set_action(pb::RULE_ACTION_DENY);
  in_.live_names.push_back(deny);
  CompiledPolicy p = Compiled();
  EXPECT_FALSE(Allowed(p, "198.51.100.1"));
  EXPECT_FALSE(p.MatchName("api.example.test").answered);
  EXPECT_EQ(p.MatchName("api.example.test").rule.source().kind(), pb::RULE_KIND_LIVE);
  EXPECT_TRUE(p.MatchName("www.example.test").answered);
}

TEST_F(CompileTest, NamePolicyListedOnlyUnlessTheWholeSpaceIsAllowed) {
  Domain("api.example.test");
  CompiledPolicy listed = Compiled();
  EXPECT_TRUE(listed.MatchName("api.example.test").answered);
  EXPECT_EQ(listed.MatchName("api.example.test").rule.source().key_path(),
            "profiles.x.allow_domains");
  EXPECT_FALSE(listed.MatchName("www.example.test").answered);
  EXPECT_FALSE(listed.MatchName("").answered);
  Allow("::/0");
  CompiledPolicy open = Compiled();
  EXPECT_TRUE(open.names_unrestricted());
  NameVerdict v = open.MatchName("www.example.test");
  EXPECT_TRUE(v.answered);
  EXPECT_EQ(v.rule.pattern(), "*");
  // A deny of the whole space keeps names listed-only.
  Deny("::/0");
  EXPECT_FALSE(Compiled().names_unrestricted());
}

TEST_F(CompileTest, BadEntriesFailTheCompile) {
  Allow("10.1.2.3/8");
  EXPECT_FALSE(Compile(in_).ok());
  in_.network.clear_allow();
  Domain("bad pattern");
  EXPECT_FALSE(Compile(in_).ok());
  in_.network.clear_allow_domains();
  in_.namespace_info.add_gateways("not-an-address");
  EXPECT_FALSE(Compile(in_).ok());
}

TEST_F(CompileTest, DigestIsTheRouterFormatInSortedOrder) {
  rt::Route a, b, c;
  a.mutable_destination()->set_prefix("::/0");
  a.set_action(rt::ROUTE_ACTION_PROHIBIT);
  b.mutable_destination()->set_prefix("10.0.0.0/8");
  b.set_action(rt::ROUTE_ACTION_ALLOW);
  c.mutable_destination()->set_prefix("0.0.0.0/0");
  c.set_action(rt::ROUTE_ACTION_PROHIBIT);
  fs::Sha256 sha;
  sha.Update("prohibit 0.0.0.0/0\nallow 10.0.0.0/8\nprohibit ::/0\n");
  std::string expected = sha.HexDigest();
  EXPECT_EQ(*RoutesDigest({a, b, c}), expected);
  EXPECT_EQ(*RoutesDigest({c, a, b}), expected);
  CompiledPolicy p = Compiled();
  EXPECT_EQ(p.digest(), *RoutesDigest(p.routes()));
}

TEST_F(CompileTest, TenThousandCidrsCompile) {
  Allow("0.0.0.0/0");
  for (int i = 0; i < 10000; ++i) {
    Deny("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24");
  }
  CompiledPolicy p = Compiled();
  EXPECT_GT(p.routes().size(), 40000u);  // each with three IPv6 forms
  EXPECT_FALSE(Allowed(p, "10.39.15.1"));
  EXPECT_TRUE(Allowed(p, "10.200.0.1"));
}


HostNetwork OnLink(const std::string& cidr, const std::string& interface,
                   uint32_t table = 254) {
  return {*IpPrefix::Parse(cidr), interface, table};
}

TEST_F(CompileTest, OnLinkPrefixIsDeniedUnderSlashZeroAllow) {
  Allow("0.0.0.0/0");
  Allow("::/0");
  in_.host.on_link = {OnLink("2001:db8:23::/64", "eth0"), OnLink("203.0.113.0/24", "wlan0")};
  CompiledPolicy p = Compiled();
  EXPECT_FALSE(Allowed(p, "2001:db8:23::2"));
  EXPECT_FALSE(Allowed(p, "203.0.113.9"));
  EXPECT_EQ(Decide(p, "2001:db8:23::2").source().kind(), pb::RULE_KIND_HOST_NETWORK);
  EXPECT_EQ(Decide(p, "2001:db8:23::2").source().detail(), "on-link on eth0 (table main)");
  EXPECT_TRUE(Allowed(p, "2001:db8:24::2"));
  EXPECT_TRUE(Allowed(p, "203.0.114.9"));
  ASSERT_NE(RouteFor(p, "2001:db8:23::/64"), nullptr);
  EXPECT_EQ(RouteFor(p, "2001:db8:23::/64")->action(), rt::ROUTE_ACTION_PROHIBIT);
}

TEST_F(CompileTest, ExactAllowOfTheOnLinkNetworkOpensIt) {
  Allow("0.0.0.0/0");
  Allow("203.0.113.0/24");
  in_.host.on_link = {OnLink("203.0.113.0/24", "eth0"), OnLink("198.18.0.0/24", "wg0", 51820)};
  in_.host.addresses = {{"eth0", *IpPrefix::ParseAddress("203.0.113.1")}};
  Live("198.18.0.0/24", pb::RULE_ACTION_ALLOW);
  CompiledPolicy p = Compiled();
  EXPECT_TRUE(Allowed(p, "203.0.113.2"));
  EXPECT_TRUE(Allowed(p, "198.18.0.7"));
  // The host's own address on it stays closed.
  EXPECT_FALSE(Allowed(p, "203.0.113.1"));
  EXPECT_EQ(Decide(p, "203.0.113.1").source().kind(), pb::RULE_KIND_HOST_ADDRESS);
}

TEST_F(CompileTest, BroaderNonDefaultAllowDoesNotOpenItButANarrowerOneDoes) {
  Allow("2001:db8::/32");
  Allow("2001:db8:23::7/128");
  in_.host.on_link = {OnLink("2001:db8:23::/64", "eth0")};
  CompiledPolicy p = Compiled();
  EXPECT_FALSE(Allowed(p, "2001:db8:23::2"));
  EXPECT_TRUE(Allowed(p, "2001:db8:23::7"));
  EXPECT_TRUE(Allowed(p, "2001:db8:99::2"));
}

TEST_F(CompileTest, NameAnswerInsideAHostNetworkIsDropped) {
  Allow("0.0.0.0/0");
  Domain("*.example.test");
  in_.host.on_link = {OnLink("203.0.113.0/24", "eth0")};
  NameRoute("203.0.113.5", "lan.example.test", 1300);
  NameRoute("198.51.100.1", "api.example.test", 1300);
  CompiledPolicy p = Compiled();
  EXPECT_FALSE(Allowed(p, "203.0.113.5"));
  const pb::Rule* deciding = nullptr;
  EXPECT_FALSE(p.AdmitsNameAddress(*IpPrefix::ParseAddress("203.0.113.5"), &deciding));
  EXPECT_EQ(deciding->source().kind(), pb::RULE_KIND_HOST_NETWORK);
  EXPECT_TRUE(Allowed(p, "198.51.100.1"));
}

TEST_F(CompileTest, Ipv4OnLinkEmbeddedFormsDenied) {
  Allow("0.0.0.0/0");
  Allow("::/0");
  in_.host.on_link = {OnLink("203.0.113.0/24", "eth0")};
  CompiledPolicy p = Compiled();
  for (const char* form : {"::ffff:203.0.113.2", "64:ff9b::cb00:7102", "2002:cb00:7102::1"}) {
    EXPECT_FALSE(Allowed(p, form)) << form;
    EXPECT_EQ(Decide(p, form).source().kind(), pb::RULE_KIND_DERIVED) << form;
  }
  EXPECT_TRUE(Allowed(p, "::ffff:203.0.114.2"));
}

TEST_F(CompileTest, UnknownHostStateClosesEverything) {
  Allow("0.0.0.0/0");
  Allow("::/0");
  Allow("10.1.0.0/16");
  Live("10.2.0.0/16", pb::RULE_ACTION_ALLOW);
  Domain("*.example.test");
  NameRoute("198.51.100.1", "api.example.test", 1300);
  in_.host_unknown = true;
  CompiledPolicy p = Compiled();
  EXPECT_TRUE(p.host_unknown());
  for (const auto& route : p.routes()) {
    EXPECT_EQ(route.action(), rt::ROUTE_ACTION_PROHIBIT) << route.destination().prefix();
  }
  EXPECT_FALSE(p.names_unrestricted());
  EXPECT_FALSE(p.MatchName("api.example.test").answered);
}

TEST_F(CompileTest, EveryNameIsAnsweredOnlyInOpenEgress) {
  Allow("0.0.0.0/0");
  EXPECT_TRUE(Compiled().names_unrestricted());  // unspecified: open
  in_.network.set_egress(cfg::EGRESS_MODE_OPEN);
  EXPECT_TRUE(Compiled().names_unrestricted());
  in_.network.set_egress(cfg::EGRESS_MODE_NAMES);
  EXPECT_FALSE(Compiled().names_unrestricted());
  EXPECT_TRUE(Allowed(Compiled(), "198.51.100.1"));  // the addresses stay as configured
  in_.network.set_egress(cfg::EGRESS_MODE_ASK);
  EXPECT_FALSE(Compiled().names_unrestricted());
}

}  // namespace
}  // namespace lazaret::netpolicyd
