// lazaret-brokerd: the escalation broker. Receives host-command requests from sandboxes and serves
// the approver API. Holds no capabilities: approved commands run as the user.
#ifndef LAZARET_SERVICES_BROKERD_BROKERD_H_
#define LAZARET_SERVICES_BROKERD_BROKERD_H_

#include <sys/capability.h>

#include <array>

#include "absl/status/status.h"
#include "services/common/service_catalog.h"
#include "services/common/service_main.h"

namespace lazaret::brokerd {

// The capabilities this process keeps; everything else is dropped at start.
// The set is written in the service catalog (services/common/service_catalog.h);
// deploy/capabilities.toml restates it and a test compares the two.
inline constexpr const auto& kCapabilities = kBrokerdCapabilities;

ServiceSpec Spec();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::brokerd

#endif
