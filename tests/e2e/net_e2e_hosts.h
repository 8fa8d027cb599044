// The test hosts of the network end-to-end tests and the addresses the
// tests use (net_test_hosts.h builds them). Addresses this machine does
// not otherwise use: TEST-NET-2 and 2001:db8::/32 stand in for the public
// internet (not in the default deny list), private, metadata and embedded
// forms for what must stay unreachable. Every address a sandbox is sent
// to, denied ones included, is carried by a test host, so that even a
// policy that fails lets nothing leave this machine.
#ifndef LAZARET_TESTS_E2E_NET_E2E_HOSTS_H_
#define LAZARET_TESTS_E2E_NET_E2E_HOSTS_H_

#include <vector>

#include "tests/e2e/net_test_hosts.h"

namespace lazaret::test::e2e::net {

// "public": allowed by the profiles that allow anything. Reached through a
// gateway (the test host's inner end, on a link net in 10.210.0.0/16 and
// fd42:210::/48, denied anyway), so none of these is on a network the host
// is directly connected to; the host's own address among them is a /32
// (/128) without a prefix route.
inline constexpr char kPublicV4[] = "198.51.100.2";
inline constexpr char kPublicV6[] = "2001:db8:51::2";
inline constexpr char kPublicCname[] = "198.51.100.3";     // a CNAME chain's end
inline constexpr char kPublicFlood[] = "198.51.100.4";     // denied live under a flood
inline constexpr char kPublicKill[] = "198.51.100.5";      // flooded while the sidecar dies
inline constexpr char kPublicLive[] = "198.51.100.6";      // denied live, then the next connect
inline constexpr char kPublicHostSide[] = "198.51.100.1";  // a host address inside it
// The test DNS server, upstream of netpolicyd (network.dns_upstream).
inline constexpr char kDnsServer[] = "198.51.100.53";

// "private": inside the default deny list.
inline constexpr char kPrivate10[] = "10.203.0.2";
inline constexpr char kPrivateNarrow[] = "10.203.0.3";  // allow_egress ["10.203.0.3/32"]
inline constexpr char kPrivate172[] = "172.20.99.2";    // allowed and denied at /24
inline constexpr char kPrivate192[] = "192.168.203.2";  // opened by `lazaret net allow`
inline constexpr char kPrivateUla[] = "fd42:203::2";
inline constexpr char kMetadata[] = "169.254.169.254";
inline constexpr char kMetadataV6[] = "fd00:ec2::254";
inline constexpr char kMetadataCgnat[] = "100.100.100.200";
// 10.203.0.2 embedded in IPv6: NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
inline constexpr char kNat64Private[] = "64:ff9b::acb:2";
inline constexpr char kSixToFourPrivate[] = "2002:acb:2::1";
inline constexpr char kMappedPrivate[] = "::ffff:10.203.0.2";

// "subnet": an allowed subnet whose host side is a host address.
inline constexpr char kSubnetHost[] = "10.204.0.2";
inline constexpr char kSubnetHostSide[] = "10.204.0.1";
inline constexpr char kSubnetCidr[] = "10.204.0.0/24";

// Host networks: prefixes the host is directly connected to (on-link),
// public addresses otherwise. "lan4" and "lan6" are a LAN the host sits on,
// with a peer on it (the host side is the host's address on that LAN).
// Not TEST-NET-3: some build machines resolve their package mirrors into
// 203.0.113.0/24, and an on-link route there would cut them off.
inline constexpr char kLan4[] = "198.51.100.130";
inline constexpr char kLan4Cidr[] = "198.51.100.128/28";
inline constexpr char kLan4HostSide[] = "198.51.100.129";
inline constexpr char kLan6[] = "2001:db8:23::2";
inline constexpr char kLan6Cidr[] = "2001:db8:23::/64";
inline constexpr char kLan6HostSide[] = "2001:db8:23::1";
// Public addresses inside "pub" whose prefix a test makes on-link for a
// while (TestHost::AddOnLinkPrefix on "pub"): routing does not change (the
// /32 via the gateway is longer), only whether the host is connected.
inline constexpr char kMidV4[] = "198.51.100.200";
inline constexpr char kMidPrefixV4[] = "198.51.100.192/27";
inline constexpr char kMidV6[] = "2001:db8:51:1::2";
inline constexpr char kMidPrefixV6[] = "2001:db8:51:1::/64";
// Addresses a test adds to the host ("pub"'s host side) while a sandbox
// runs. "pub" carries them too (through its gateway), so a connect to one
// reaches a test host whether or not the host holds it at that moment.
inline constexpr char kLateV4[] = "198.51.100.77";
inline constexpr char kLateV6[] = "2001:db8:51::77";

std::vector<TestHostSpec> NetTestHostSpecs();

}  // namespace lazaret::test::e2e::net

#endif  // LAZARET_TESTS_E2E_NET_E2E_HOSTS_H_
