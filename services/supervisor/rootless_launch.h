// How a rootless supervisor starts lazaret-mount-helper: below
// `podman unshare`, so that its fuse-overlayfs mounts are made in rootless
// podman's user and mount namespace, where the user's containers see them.
// Runs in lazaret-supervisord, before its capability drop: the supervisor
// then sets no_new_privs, under which `podman unshare` can only join an
// existing rootless namespace (newuidmap, setuid, no longer works), so the
// namespace (podman's pause process) is made sure of here, first.
// Trusts podman from the fixed system directories only.
#ifndef LAZARET_SERVICES_SUPERVISOR_ROOTLESS_LAUNCH_H_
#define LAZARET_SERVICES_SUPERVISOR_ROOTLESS_LAUNCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::supervisor {

// Empty when the supervisor runs as root (the helper is started directly);
// else {"<podman>", "unshare"} after `podman unshare true` succeeded with
// `env` (the services' environment). Precondition: no threads yet, before
// no_new_privs.
absl::StatusOr<std::vector<std::string>> MountHelperLauncher(const std::vector<std::string>& env);

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_ROOTLESS_LAUNCH_H_
