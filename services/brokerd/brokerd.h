// lazaret-brokerd: the escalation broker. Receives host-command requests from sandboxes and serves
// the approver API. Holds no capabilities: approved commands run as the user.
#ifndef LAZARET_SERVICES_BROKERD_BROKERD_H_
#define LAZARET_SERVICES_BROKERD_BROKERD_H_

#include <sys/capability.h>

#include <array>

#include "absl/status/status.h"
#include "services/common/service_main.h"

namespace lazaret::brokerd {

// The capabilities this process keeps; everything else is dropped at start.
// deploy/capabilities.toml restates this set and a test compares the two.
inline constexpr std::array<cap_value_t, 0> kCapabilities = {};

ServiceSpec Spec();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::brokerd

#endif
