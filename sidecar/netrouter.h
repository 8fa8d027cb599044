// lazaret-netrouter: the Netlink router inside the shell-less network sidecar (runc, FROM scratch).
// Applies typed route operations to the network namespace the agent sandbox shares. CAP_NET_ADMIN
// is the only capability it keeps.
#ifndef LAZARET_SIDECAR_NETROUTER_H_
#define LAZARET_SIDECAR_NETROUTER_H_

#include <sys/capability.h>

#include <array>

#include "absl/status/status.h"
#include "services/common/service_main.h"

namespace lazaret::netrouter {

// The capabilities this process keeps; everything else is dropped at start.
// deploy/capabilities.toml restates this set and a test compares the two.
inline constexpr std::array<cap_value_t, 1> kCapabilities = {CAP_NET_ADMIN};

ServiceSpec Spec();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::netrouter

#endif
