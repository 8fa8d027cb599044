// Who controls the egress policy, end to end: the sandbox cannot change
// routes, rules, addresses or network sysctls, nor open raw or packet
// sockets (checked from the host in the router's namespace); the user
// sees and changes it with `lazaret net show/test/allow/deny/reload` from
// the host, and changes apply to the very next connect, also under a
// connect flood; a killed sidecar ends the session with no connectivity
// after the kill. Part of net_e2e_test (same binary); runs as root.
#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "tests/e2e/net_e2e_fixture.h"

namespace lazaret::test::e2e::net {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace pb = ::lazaret::netpolicy::v1;

// A connect that began this long after a change returned and still
// succeeded is a violation (gVisor's clock against the host's: both
// CLOCK_REALTIME of one kernel, read through gVisor's timekeeper).
constexpr int64_t kClockSlackNs = 5'000'000;
// A contact the test host accepted this long after a change returned came
// from a connect begun after it (a handshake here takes well under it).
constexpr int64_t kAcceptSlackNs = 200'000'000;

// What the sandbox must not be able to change, read from the host.
std::string NetworkState(const NetSession& s) {
  std::string out;
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"-4", "route", "show", "table", "100"},
                                             {"-6", "route", "show", "table", "100"},
                                             {"-4", "route", "show", "table", "main"},
                                             {"-4", "rule", "show"},
                                             {"-6", "rule", "show"},
                                             {"-br", "addr", "show"},
                                             {"-br", "link", "show"}}) {
    out += s.RouterIp(args).out;
  }
  for (const char* f : {"ipv4/ip_forward", "ipv4/ip_unprivileged_port_start",
                        "ipv4/neigh/tap0/mcast_solicit", "ipv4/neigh/tap0/ucast_solicit",
                        "ipv4/neigh/tap0/app_solicit", "ipv6/neigh/tap0/mcast_solicit",
                        "ipv6/conf/all/disable_ipv6", "ipv6/conf/all/forwarding"}) {
    out += std::string(f) + "=" + s.RouterSysctl(f) + "\n";
  }
  return out;
}

TEST_F(NetE2eTest, SandboxCannotChangeRoutesRulesAddressesOrSysctls) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const std::string before = NetworkState(*s);
  EXPECT_THAT(before, HasSubstr("prohibit 10.0.0.0/8")) << before;
  const char* kScript =
      "t() { l=$1; shift; if \"$@\" >/dev/null 2>&1; then echo \"$l ALLOWED\"; "
      "else echo \"$l refused\"; fi; }\n"
      "t route-add ip route add throw 10.0.0.0/8 table 100\n"
      "t route-del ip route del 10.0.0.0/8 table 100\n"
      "t route6-del ip -6 route del default table 100\n"
      "t main-add ip route add 10.203.0.0/24 via 10.0.2.2\n"
      "t rule-add ip rule add pref 1 lookup main\n"
      "t rule-del ip rule del pref 100\n"
      "t rule6-add ip -6 rule add pref 1 lookup main\n"
      "t addr-add ip addr add 10.203.0.9/24 dev tap0\n"
      "t addr6-add ip -6 addr add fd42:203::9/64 dev tap0\n"
      "t neigh-add ip neigh replace 10.0.2.3 lladdr 52:55:0a:00:02:03 dev tap0 nud permanent\n"
      "t link-down ip link set tap0 mtu 1280\n"
      "t forward sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'\n"
      "t probes sh -c 'echo 3 > /proc/sys/net/ipv4/neigh/tap0/mcast_solicit'\n"
      "t ucast sh -c 'echo 3 > /proc/sys/net/ipv4/neigh/tap0/ucast_solicit'\n"
      "t v6-off sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6'\n"
      "t ports sh -c 'echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start'\n"
      // Exit 0 when it finds nothing to flush (gVisor lists no table-100
      // routes inside): judged by the state alone.
      "ip route flush table 100 >/dev/null 2>&1; ip -6 route flush table 100 >/dev/null 2>&1\n";
  CommandResult r = s->Shell(kScript);
  int lines = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    ++lines;
    EXPECT_THAT(line, testing::EndsWith(" refused")) << "inside the sandbox: " << line;
  }
  EXPECT_EQ(lines, 16) << r.out << r.err;
  EXPECT_EQ(NetworkState(*s), before);
}

TEST_F(NetE2eTest, NoRawOrPacketSocketsInside) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const std::string out = Trim(s->Exec({kProbe, "raw"}).out);
  for (const char* kind : {"raw-icmp", "raw-tcp", "raw-ipv6", "packet-raw", "packet-dgram"}) {
    EXPECT_THAT(out, Not(HasSubstr(std::string(kind) + "=OPEN"))) << out;
  }
  EXPECT_THAT(out, HasSubstr("tcp=OPEN"));  // the control
}

const pb::Rule* FindRule(const pb::SessionPolicy& p, const std::string& prefix) {
  for (const auto& r : p.rules()) {
    if (r.destination().prefix() == prefix) return &r;
  }
  return nullptr;
}

// The 1-based line of `needle` in `text` after the line holding `after`.
uint32_t LineOf(const std::string& text, const std::string& after, const std::string& needle) {
  std::istringstream in(text);
  uint32_t n = 0;
  bool seen = false;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find(after) != std::string::npos) seen = true;
    if (seen && line.find(needle) != std::string::npos) return n;
  }
  return 0;
}

TEST_F(NetE2eTest, NetShowJsonListsRulesWithSourcesAndTheInstalledTable) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  CommandResult r = LazaretNet({"show", s->id(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  pb::SessionPolicy p;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &p).ok()) << r.out;
  EXPECT_EQ(p.session().id(), s->id());
  EXPECT_EQ(p.profile(), kPubProfile);
  EXPECT_GE(p.generation(), 1u);
  EXPECT_EQ(p.digest().size(), 64u) << p.digest();
  EXPECT_TRUE(p.router_reachable());
  EXPECT_TRUE(p.names_unrestricted());
  EXPECT_THAT(p.dns_upstream(), testing::Contains(std::string(kDnsServer) + ":53"));

  const pb::Rule* subnet = FindRule(p, kSubnetCidr);
  ASSERT_NE(subnet, nullptr) << r.out;
  EXPECT_EQ(subnet->action(), pb::RULE_ACTION_ALLOW);
  EXPECT_EQ(subnet->source().kind(), pb::RULE_KIND_CONFIG);
  EXPECT_EQ(subnet->source().layer(), common::v1::CONFIG_LAYER_EXPLICIT);
  EXPECT_THAT(subnet->source().key_path(),
              testing::StartsWith(std::string("profiles.") + kPubProfile + ".allow_egress"));
  EXPECT_EQ(subnet->source().line(),
            LineOf(test::ReadFile(W().config()), std::string("[profiles.") + kPubProfile + "]",
                   "allow_egress"));
  const pb::Rule* ten = FindRule(p, "10.0.0.0/8");
  ASSERT_NE(ten, nullptr);
  EXPECT_EQ(ten->action(), pb::RULE_ACTION_DENY);
  EXPECT_THAT(ten->source().key_path(), testing::StartsWith("network.default_deny"));
  for (const auto& [prefix, kind] : std::vector<std::pair<std::string, pb::RuleKind>>{
           {std::string(kPublicHostSide) + "/32", pb::RULE_KIND_HOST_ADDRESS},
           {std::string(kSubnetHostSide) + "/32", pb::RULE_KIND_HOST_ADDRESS},
           {"10.0.2.2/32", pb::RULE_KIND_GATEWAY},
           {"169.254.169.254/32", pb::RULE_KIND_ALWAYS}}) {
    const pb::Rule* rule = FindRule(p, prefix);
    ASSERT_NE(rule, nullptr) << prefix << "\n" << r.out;
    EXPECT_EQ(rule->action(), pb::RULE_ACTION_DENY) << prefix;
    EXPECT_EQ(rule->source().kind(), kind) << prefix;
  }
  bool derived_nat64 = false;
  for (const auto& rule : p.rules()) {
    derived_nat64 |= rule.source().kind() == pb::RULE_KIND_DERIVED &&
                     rule.destination().prefix().rfind("64:ff9b::", 0) == 0;
  }
  EXPECT_TRUE(derived_nat64) << r.out;
  // The table the router has, as read back now.
  bool prohibit_ten = false, allow_subnet = false;
  for (const auto& route : p.installed()) {
    prohibit_ten |= route.destination().prefix() == "10.0.0.0/8" &&
                    route.action() == netrouter::v1::ROUTE_ACTION_PROHIBIT;
    allow_subnet |= route.destination().prefix() == kSubnetCidr &&
                    route.action() == netrouter::v1::ROUTE_ACTION_ALLOW;
  }
  EXPECT_TRUE(prohibit_ten && allow_subnet) << r.out;

  CommandResult human = LazaretNet({"show", s->id()});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_THAT(human.out, HasSubstr(kSubnetCidr));
  EXPECT_THAT(human.out, HasSubstr(kPubProfile));
}

TEST_F(NetE2eTest, NetTestSaysAllowedOrDeniedWithItsExitStatus) {
  NetSession* pub = Pub();
  ASSERT_NE(pub, nullptr) << PubError();
  for (const auto& [dest, code] :
       std::vector<std::pair<std::string, int>>{{std::string(kPublicV4) + ":" + kPort, 0},
                                                {std::string(kSubnetHost) + ":" + kPort, 0},
                                                {std::string(kPrivate10) + ":" + kPort, 1},
                                                {"[" + std::string(kPrivateUla) + "]:" + kPort, 1},
                                                {std::string(kSubnetHostSide) + ":" + kPort, 1},
                                                {std::string(kDnsServer) + ":53", 1},
                                                {"not-a-destination", 2}}) {
    CommandResult t = LazaretNet({"test", pub->id(), dest});
    EXPECT_EQ(t.exit_code, code) << dest << "\n" << t.out << t.err;
    if (code == 0) {
      EXPECT_THAT(t.out, HasSubstr("allowed")) << dest;
    }
    if (code == 1) {
      EXPECT_THAT(t.out, HasSubstr("denied")) << dest;
    }
  }
  NetSession* names = Names();
  ASSERT_NE(names, nullptr) << NamesError();
  EXPECT_EQ(LazaretNet({"test", names->id(), std::string(kNameOk) + ":" + kPort}).exit_code, 0);
  EXPECT_EQ(LazaretNet({"test", names->id(), std::string(kNameSecret) + ":" + kPort}).exit_code, 1);
  EXPECT_EQ(W().dns().QueryCount(kNameSecret), 0);
}

TEST_F(NetE2eTest, LiveAllowAndDenyApplyToTheNextConnect) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  EXPECT_REFUSED_FAST(s->Probe({"connect", kPrivate192, kPort}), "before the live allow");
  CommandResult allow =
      LazaretNet({"allow", s->id(), std::string(kPrivate192) + "/32", "--for", "4s"});
  ASSERT_EQ(allow.exit_code, 0) << allow.out << allow.err;
  EXPECT_CONNECTS(s->Probe({"connect", kPrivate192, kPort}), "right after the live allow");
  // It expires by itself.
  ProbeResult later;
  EXPECT_TRUE(test::WaitFor(
      [&] {
        later = s->Probe({"connect", kPrivate192, kPort});
        return later.refused_fast();
      },
      std::chrono::seconds(15)))
      << "still open after --for 4s: " << later.line;

  EXPECT_CONNECTS(s->Probe({"connect", kPublicLive, kPort}), "before the live deny");
  CommandResult deny = LazaretNet({"deny", s->id(), std::string(kPublicLive) + "/32"});
  ASSERT_EQ(deny.exit_code, 0) << deny.out << deny.err;
  EXPECT_REFUSED_FAST(s->Probe({"connect", kPublicLive, kPort}), "right after the live deny");
  CommandResult bad = LazaretNet({"deny", s->id(), "10.1.2.3/8"});
  EXPECT_NE(bad.exit_code, 0) << bad.out;
}

// A flood of connects from inside while the policy changes: the one
// destination that gets denied shows no connect begun after the command
// returned that succeeded, and a destination denied throughout never
// answers, not even during a reload.
TEST_F(NetE2eTest, DenyUnderAFloodShowsNoSuccessAfterTheCommandReturned) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const std::string ws = W().Workspace(kPubProfile);
  test::Run({"rm", "-f", ws + "/flood-deny", ws + "/flood-private"});
  std::thread flood([&] {
    s->Exec({kProbe, "flood", kPublicFlood, kPort, "8", "--out", "/workspace/flood-deny",
             "--interval-ms", "2"});
  });
  std::thread flood_denied([&] {
    s->Exec({kProbe, "flood", kPrivate10, kPort, "8", "--out", "/workspace/flood-private",
             "--interval-ms", "2"});
  });
  const bool flowing = test::WaitFor(
      [&] { return ParseFlood(test::ReadFile(ws + "/flood-deny")).ok_starts.size() >= 20; },
      std::chrono::seconds(20));
  CommandResult reload = LazaretNet({"reload", s->id()});
  CommandResult allow = LazaretNet({"allow", s->id(), "203.0.113.0/24"});
  CommandResult deny = LazaretNet({"deny", s->id(), std::string(kPublicFlood) + "/32"});
  const int64_t denied_at = RealtimeNs();
  flood.join();
  flood_denied.join();
  ASSERT_TRUE(flowing) << test::ReadFile(ws + "/flood-deny");
  EXPECT_EQ(reload.exit_code, 0) << reload.err;
  EXPECT_EQ(allow.exit_code, 0) << allow.err;
  ASSERT_EQ(deny.exit_code, 0) << deny.err;

  const FloodLog log = ParseFlood(test::ReadFile(ws + "/flood-deny"));
  EXPECT_TRUE(log.done);
  EXPECT_EQ(log.bad_lines, 0u);
  EXPECT_EQ(SuccessesStartedAfter(log, denied_at + kClockSlackNs), 0u)
      << "connects begun after `lazaret net deny` returned succeeded";
  ASSERT_FALSE(log.errors.empty());
  EXPECT_EQ(log.errors.back().second, "EACCES");
  EXPECT_EQ(W().host("pub").listeners().CountAfter(kPublicFlood, denied_at + kAcceptSlackNs), 0u);

  const FloodLog denied = ParseFlood(test::ReadFile(ws + "/flood-private"));
  EXPECT_TRUE(denied.done);
  EXPECT_TRUE(denied.ok_starts.empty()) << denied.ok_starts.size() << " connects got through";
  EXPECT_GT(denied.failed, 100);
  for (const auto& [at, err] : denied.errors) {
    EXPECT_EQ(err, "EACCES");
  }
  EXPECT_EQ(W().host("priv").listeners().CountTo(kPrivate10), 0u);
}

TEST_F(NetE2eTest, KilledSidecarEndsTheSessionWithNoConnectivityAfterTheKill) {
  absl::StatusOr<std::unique_ptr<NetSession>> started = W().StartSession(kKillProfile);
  ASSERT_TRUE(started.ok()) << started.status();
  NetSession& s = **started;
  const std::string ws = W().Workspace(kKillProfile);
  test::Run({"rm", "-f", ws + "/flood-kill"});
  std::thread flood([&] {
    s.Exec({kProbe, "flood", kPublicKill, kPort, "20", "--out", "/workspace/flood-kill",
            "--interval-ms", "2"});
  });
  const bool flowing = test::WaitFor(
      [&] { return ParseFlood(test::ReadFile(ws + "/flood-kill")).ok_starts.size() >= 20; },
      std::chrono::seconds(20));
  CommandResult kill = Podman({"kill", s.sidecar()});
  const int64_t killed_at = RealtimeNs();
  const int code = s.WaitExit(60);
  flood.join();
  ASSERT_TRUE(flowing) << test::ReadFile(ws + "/flood-kill") << s.Log();
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  EXPECT_NE(code, 0) << s.Log();
  EXPECT_NE(code, -1) << "the session outlived its sidecar: " << s.Log();
  EXPECT_THAT(s.Log(), HasSubstr("sidecar"));
  const FloodLog log = ParseFlood(test::ReadFile(ws + "/flood-kill"));
  EXPECT_EQ(SuccessesStartedAfter(log, killed_at + kClockSlackNs), 0u)
      << "connects begun after the sidecar was killed succeeded";
  EXPECT_EQ(W().host("pub").listeners().CountAfter(kPublicKill, killed_at + kAcceptSlackNs), 0u);
  for (const auto& name : SessionContainers()) {
    EXPECT_THAT(name, Not(HasSubstr(s.id()))) << "left behind";
  }
}

}  // namespace
}  // namespace lazaret::test::e2e::net
