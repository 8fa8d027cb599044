#include "tests/e2e/net_e2e_hosts.h"

namespace lazaret::test::e2e::net {

std::vector<TestHostSpec> NetTestHostSpecs() {
  return {
      {.name = "pub",
       .host_v4 = "10.210.0.1/24",
       .host_v6 = "fd42:210::1/64",
       .addresses = {"10.210.0.2/24", "fd42:210::2/64"},
       .routed = {kPublicV4, kPublicCname, kPublicFlood, kPublicKill, kPublicLive, kDnsServer,
                  kMidV4, kLateV4, kPublicV6, kMidV6, kLateV6},
       .gateway_routed = true,
       .host_only = {kPublicHostSide, "2001:db8:51::1"}},
      {.name = "priv",
       .host_v4 = "10.210.1.1/24",
       .host_v6 = "fd42:210:1::1/64",
       .addresses = {"10.210.1.2/24", "fd42:210:1::2/64"},
       .routed = {kPrivate10, kPrivateNarrow, kPrivateUla, kPrivate172, kPrivate192, kMetadata,
                  kMetadataV6, kMetadataCgnat, kNat64Private, kSixToFourPrivate},
       .gateway_routed = true},
      {.name = "sub", .host_v4 = "10.204.0.1/24", .addresses = {"10.204.0.2/24"}},
      {.name = "lan4", .host_v4 = "198.51.100.129/28", .addresses = {"198.51.100.130/28"}},
      {.name = "lan6", .host_v6 = "2001:db8:23::1/64", .addresses = {"2001:db8:23::2/64"}},
  };
}

}  // namespace lazaret::test::e2e::net
