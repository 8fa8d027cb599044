#include "tests/e2e/net_e2e_hosts.h"

namespace lazaret::test::e2e::net {

std::vector<TestHostSpec> NetTestHostSpecs() {
  return {
      {"pub",
       "198.51.100.1/24",
       "2001:db8:51::1/64",
       {"198.51.100.2/24", "198.51.100.3/24", "198.51.100.4/24", "198.51.100.5/24",
        "198.51.100.6/24", "198.51.100.53/24", "2001:db8:51::2/64"},
       {}},
      {"priv",
       "10.203.0.1/24",
       "fd42:203::1/64",
       {"10.203.0.2/24", "10.203.0.3/24", "fd42:203::2/64"},
       {kPrivate172, kPrivate192, kMetadata, kMetadataV6, kMetadataCgnat, kNat64Private,
        kSixToFourPrivate}},
      {"sub", "10.204.0.1/24", "", {"10.204.0.2/24"}, {}},
  };
}

}  // namespace lazaret::test::e2e::net
