// Multicast and broadcast from inside the sandbox, end to end. Neither is
// governed by the router's rules or table: the kernel sends link-local
// multicast, any multicast with IP_MULTICAST_IF, broadcast with
// SO_BROADCAST and anything from a socket bound to tap0 straight out of
// the interface, and IPv6 multicast takes the local table's ff00::/8 route
// (sidecar/policy_rules.h). So whatever keeps them in must be past the
// rules: the router's multicast guard on tap0 (sidecar/multicast_guard.h).
// This case sends every such form from the sandbox, and the same from the
// sidecar's namespace itself (root there, past anything gVisor refuses),
// to receivers on this machine that first proved they hear a host-local
// send, and then must have heard nothing. Host routes keep whatever
// slirp4netns forwards on this machine: the IPv4 groups on lo, the IPv6
// ones (lo does not deliver IPv6 multicast) into the "pub" test host.
// Measured with slirp4netns 1.2.0 (libslirp 4.7.0): it drops a datagram
// whose TTL / hop limit would reach 0 there (the kernel's default
// multicast TTL of 1), refuses both broadcasts (no SO_BROADCAST on its
// sockets; 10.0.2.255 is its host-loopback alias, disabled), and never
// sends to ff02::1; but it forwards IPv4 multicast, link-local groups
// included, and IPv6 multicast beyond link scope with a TTL / hop limit of
// 2 or more, sending it from a socket of the host with the host's routing
// (without these routes: out of the default route's interface) - which
// the guard stops: it drops every multicast datagram before tap0. Part of
// net_e2e_test (same binary); runs as root.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/net_e2e_fixture.h"
#include "tests/e2e/net_group_receiver.h"

namespace lazaret::test::e2e::net {
namespace {

constexpr uint16_t kGroupPort = 7359;
constexpr char kGroup[] = "239.255.77.77";    // organisation-local scope
constexpr char kMdnsGroup[] = "224.0.0.251";  // link-local scope
constexpr char kLimitedBroadcast[] = "255.255.255.255";
constexpr char kSubnetBroadcast[] = "10.0.2.255";  // slirp4netns's network
constexpr char kAllNodes[] = "ff02::1";
constexpr char kGlobalGroup[] = "ff0e::1";

// One datagram to send; `via_tap0`: when the kernel says "sent", it left
// the namespace through tap0 (towards slirp4netns).
struct Form {
  std::string label;
  std::string address;
  std::vector<std::string> options;
  bool via_tap0;
};

std::vector<Form> Forms(bool mdns) {
  const std::vector<std::string> if_tap0 = {"--mcast-if", "tap0"};
  const std::vector<std::string> dev_tap0 = {"--bind-dev", "tap0"};
  std::vector<Form> f = {
      // The policy refuses these without an interface (224.0.0.0/4 denied).
      {"group", kGroup, {}, false},
      {"group-if", kGroup, if_tap0, true},
      {"group-if-addr", kGroup, {"--mcast-if", "10.0.2.100"}, true},
      {"group-if-ttl2", kGroup, {"--mcast-if", "tap0", "--hops", "2"}, true},
      {"group-if-ttl64", kGroup, {"--mcast-if", "tap0", "--hops", "64"}, true},
      {"group-dev", kGroup, dev_tap0, true},
      {"lbcast", kLimitedBroadcast, {"--broadcast"}, false},
      {"lbcast-dev", kLimitedBroadcast, {"--broadcast", "--bind-dev", "tap0"}, true},
      {"lbcast-dev-no-opt", kLimitedBroadcast, dev_tap0, false},
      {"subnet-bcast", kSubnetBroadcast, {"--broadcast"}, true},
      {"subnet-bcast-dev", kSubnetBroadcast, {"--broadcast", "--bind-dev", "tap0"}, true},
      {"subnet-bcast-no-opt", kSubnetBroadcast, {}, false},
      {"all-nodes-zone", std::string(kAllNodes) + "%tap0", {}, true},
      {"all-nodes-if", kAllNodes, if_tap0, true},
      {"all-nodes-dev", kAllNodes, dev_tap0, true},
      {"all-nodes-zone-hops64", std::string(kAllNodes) + "%tap0", {"--hops", "64"}, true},
      {"global", kGlobalGroup, {}, true},
      {"global-if", kGlobalGroup, if_tap0, true},
      {"global-if-hops64", kGlobalGroup, {"--mcast-if", "tap0", "--hops", "64"}, true},
      {"global-dev", kGlobalGroup, dev_tap0, true},
  };
  if (mdns) {
    f.push_back({"mdns", kMdnsGroup, {}, false});
    f.push_back({"mdns-if", kMdnsGroup, if_tap0, true});
    f.push_back({"mdns-dev", kMdnsGroup, dev_tap0, true});
    f.push_back({"mdns-if-ttl64", kMdnsGroup, {"--mcast-if", "tap0", "--hops", "64"}, true});
  }
  return f;
}

std::vector<std::string> ProbeArgs(const Form& f) {
  std::vector<std::string> args = {"udp-send", f.address, std::to_string(kGroupPort)};
  args.insert(args.end(), f.options.begin(), f.options.end());
  return args;
}

// Packets tap0 sent, read from the host in the router's namespace.
uint64_t Tap0TxPackets(const NetSession& s) {
  const std::string out = s.RouterIp({"-j", "-s", "link", "show", "dev", "tap0"}).out;
  const size_t tx = out.find("\"tx\":{");
  const size_t packets = out.find("\"packets\":", tx == std::string::npos ? 0 : tx);
  if (tx == std::string::npos || packets == std::string::npos) return 0;
  return std::stoull(out.substr(packets + 10));
}

// Packets the router's multicast guard dropped on tap0 (its empty pfifo
// 2:), read from the host in the router's namespace.
uint64_t GuardDrops(const NetSession& s) {
  const std::string out =
      test::Run({"nsenter", "--net=/proc/" + std::to_string(s.RouterPid()) + "/ns/net", "tc", "-s",
                 "qdisc", "show", "dev", "tap0"})
          .out;
  const size_t q = out.find("qdisc pfifo 2:");
  const size_t d = out.find("dropped ", q == std::string::npos ? 0 : q);
  if (q == std::string::npos || d == std::string::npos) return 0;
  return std::stoull(out.substr(d + 8));
}

TEST_F(NetE2eTest, MulticastAndBroadcastFromInsideReachNothing) {
  NetSession* s = Pub();
  ASSERT_NE(s, nullptr) << PubError();
  const TestHost& pub = W().host("pub");
  const std::string pub_host_side = pub.netns() + "-h", pub_inside = pub.netns() + "-n";
  // 224.0.0.251 is routed to lo only while nothing on the host speaks mDNS.
  const bool mdns = !HostHasMdnsListener();
  std::vector<HostRoutes::Route> routes = {
      {"-4", {std::string(kGroup) + "/32", "dev", "lo"}},
      {"-6",
       {"multicast", std::string(kGlobalGroup) + "/128", "dev", pub_host_side, "table", "local"}},
      {"-6",
       {"multicast", std::string(kAllNodes) + "/128", "dev", pub_host_side, "table", "local"}}};
  std::vector<GroupSocket::Join> v4_joins = {{kGroup, "lo"}};
  if (mdns) {
    routes.push_back({"-4", {std::string(kMdnsGroup) + "/32", "dev", "lo"}});
    v4_joins.push_back({kMdnsGroup, "lo"});
  }
  absl::StatusOr<std::unique_ptr<HostRoutes>> added = HostRoutes::Add(routes);
  ASSERT_TRUE(added.ok()) << added.status();
  // The host's: the IPv4 groups on lo, and whatever reaches the port at
  // all (where slirp4netns would put 10.0.2.x, its host-loopback alias, and
  // the local copy of any broadcast it sent).
  absl::StatusOr<std::unique_ptr<GroupReceiver>> host =
      GroupReceiver::Start(nullptr, kGroupPort, {{"0.0.0.0", v4_joins}, {"::", {}}});
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<std::unique_ptr<GroupReceiver>> v6 =
      GroupReceiver::Start(&pub, kGroupPort, {{"::", {{kGlobalGroup, pub_inside}}}});
  ASSERT_TRUE(v6.ok()) << v6.status();

  // They hear a host-local send to every group and to loopback.
  std::vector<std::pair<std::string, const GroupReceiver*>> proofs = {{kGroup, host->get()},
                                                                      {"127.0.0.1", host->get()},
                                                                      {kGlobalGroup, v6->get()},
                                                                      {kAllNodes, v6->get()}};
  if (mdns) proofs.push_back({kMdnsGroup, host->get()});
  for (const auto& [address, receiver] : proofs) {
    const std::string payload = "host-local " + address;
    ASSERT_TRUE(SendDatagram(address, kGroupPort, payload).ok()) << address;
    ASSERT_TRUE(receiver->WaitForPayload(payload, std::chrono::seconds(3)))
        << "a host-local send to " << address << " did not arrive:\n"
        << receiver->Describe();
  }
  // The host's own all-nodes send also loops back to its [::] socket.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const size_t host_before = (*host)->Count(), v6_before = (*v6)->Count();
  const uint64_t tx_before = Tap0TxPackets(*s);
  const uint64_t drops_before = GuardDrops(*s);

  const std::vector<Form> forms = Forms(mdns);
  std::vector<ProbeCall> calls;
  for (const Form& f : forms) calls.push_back({f.label, ProbeArgs(f)});
  std::map<std::string, ProbeResult> inside = s->Probes(calls);
  // The same sends from the sidecar's namespace, as root there.
  std::map<std::string, ProbeResult> ns;
  const std::string netns = "--net=/proc/" + std::to_string(s->RouterPid()) + "/ns/net";
  for (const Form& f : forms) {
    std::vector<std::string> argv = {"nsenter", netns, test::Binary("lazaret_net_probe")};
    for (const auto& a : ProbeArgs(f)) argv.push_back(a);
    CommandResult r = test::Run(argv);
    ns[f.label] = ParseProbeLine(Trim(r.out));
    if (!ns[f.label].parsed) ns[f.label].line = r.out + r.err;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));

  uint64_t left_via_tap0 = 0;
  for (const Form& f : forms) {
    for (const auto* results : {&inside, &ns}) {
      const ProbeResult& r = results->at(f.label);
      const char* where = results == &inside ? "sandbox" : "sidecar netns";
      EXPECT_TRUE(r.parsed) << where << " " << f.label << ": " << r.line;
      if (r.ok && f.via_tap0) ++left_via_tap0;
      std::cout << "[ measured ] " << where << " " << f.label << " (" << f.address
                << "): " << r.line << "\n";
    }
  }
  const uint64_t tx = Tap0TxPackets(*s) - tx_before;
  const uint64_t drops = GuardDrops(*s) - drops_before;
  std::cout << "[ measured ] tap0 sent " << tx << " packets and the multicast guard dropped "
            << drops << "; " << left_via_tap0 << " sends said \"sent\" through tap0\n";
  // Every datagram the kernel accepted went to tap0: the guard dropped the
  // multicast ones (the kernel sends them past every rule), the broadcast
  // ones reached slirp4netns ...
  EXPECT_GE(tx + drops, left_via_tap0);
  EXPECT_GT(drops, 0u) << "the multicast guard dropped nothing";
  // ... and nothing came out of it anywhere on this machine (a datagram
  // here came from slirp4netns's own socket, the host's address as sender).
  EXPECT_EQ((*host)->Count(), host_before) << "the host received:\n" << (*host)->Describe();
  EXPECT_EQ((*v6)->Count(), v6_before) << "the IPv6 groups received:\n" << (*v6)->Describe();
}

}  // namespace
}  // namespace lazaret::test::e2e::net
