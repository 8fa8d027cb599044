// lazaret-configd: the config service. Turns TOML layers into resolved, validated profiles. Holds no capabilities; its input (TOML files, one of them agent-writable) is untrusted.
#ifndef LAZARET_SERVICES_CONFIGD_CONFIGD_H_
#define LAZARET_SERVICES_CONFIGD_CONFIGD_H_

#include <sys/capability.h>

#include <array>

#include "absl/status/status.h"
#include "services/common/service_main.h"

namespace lazaret::configd {

// The capabilities this process keeps; everything else is dropped at start.
// deploy/capabilities.toml restates this set and a test compares the two.
inline constexpr std::array<cap_value_t, 0> kCapabilities = {};

ServiceSpec Spec();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::configd

#endif
