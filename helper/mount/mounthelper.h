// lazaret-mount-helper: the mount helper. Performs a closed set of typed fuse-overlayfs mounts for
// profile persistence. Meant to run inside `podman unshare`, where CAP_SYS_ADMIN is that of the
// user's own user namespace.
#ifndef LAZARET_HELPER_MOUNT_MOUNTHELPER_H_
#define LAZARET_HELPER_MOUNT_MOUNTHELPER_H_

#include <sys/capability.h>

#include <array>

#include "absl/status/status.h"
#include "services/common/service_main.h"

namespace lazaret::mounthelper {

// The capabilities this process keeps; everything else is dropped at start.
// deploy/capabilities.toml restates this set and a test compares the two.
inline constexpr std::array<cap_value_t, 1> kCapabilities = {CAP_SYS_ADMIN};

ServiceSpec Spec();

// Asks for SIGTERM when the parent exits: rootless, the parent is
// `podman unshare`, which does not pass on the supervisor's SIGTERM, so
// without this a stopped or restarted helper would outlive it. False when
// the parent is already gone. Call first thing in main().
bool ExitWithParent();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::mounthelper

#endif
