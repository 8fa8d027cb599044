// lazaret-configd: the config service. Turns TOML layers into resolved,
// validated profiles; the single process that parses Lazaret's TOML. Runs as
// the user, started by the supervisor, and holds no capabilities. Its input
// is untrusted: the workspace's lazaret.toml is agent-writable, and even the
// request (workspace directory, --config path) is only as trusted as the
// local client that sent it. Its output is trusted by the rest of Lazaret.
#ifndef LAZARET_SERVICES_CONFIGD_CONFIGD_H_
#define LAZARET_SERVICES_CONFIGD_CONFIGD_H_

#include <sys/capability.h>

#include <array>

#include "absl/status/status.h"
#include "services/common/service_catalog.h"
#include "services/common/service_main.h"

namespace lazaret::configd {

// The capabilities this process keeps; everything else is dropped at start.
// The set is written in the service catalog (services/common/service_catalog.h);
// deploy/capabilities.toml restates it and a test compares the two.
inline constexpr const auto& kCapabilities = kConfigdCapabilities;

ServiceSpec Spec();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::configd

#endif
