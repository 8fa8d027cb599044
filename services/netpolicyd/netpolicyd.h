// lazaret-netpolicyd: the network-policy service. Computes each session's egress route table and
// pushes it to the session's sidecar router over gRPC. Holds no capabilities: the only process that
// touches Netlink is the router inside the sidecar.
#ifndef LAZARET_SERVICES_NETPOLICYD_NETPOLICYD_H_
#define LAZARET_SERVICES_NETPOLICYD_NETPOLICYD_H_

#include <sys/capability.h>

#include <array>

#include "absl/status/status.h"
#include "services/common/service_main.h"

namespace lazaret::netpolicyd {

// The capabilities this process keeps; everything else is dropped at start.
// deploy/capabilities.toml restates this set and a test compares the two.
inline constexpr std::array<cap_value_t, 0> kCapabilities = {};

ServiceSpec Spec();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::netpolicyd

#endif
