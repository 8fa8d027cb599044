// lazaret-mount-helper: the overlays of profile persistence (the kernel's
// overlayfs, or fuse-overlayfs: overlay_driver.h; overlay_manager.h), served as MountHelperService on mount-helper.sock.
// Rootful it runs as root; rootless the supervisor starts it as
// `podman unshare lazaret-mount-helper --runtime-dir=DIR`, so it lives in
// rootless podman's user and mount namespace (the pause process's), where
// the user's containers see its mounts and from where nothing outside that
// namespace can reach them (they exist only in that mount namespace).
// Either way it keeps only CAP_SYS_ADMIN (rootless: of that user namespace) and
// hands it to podman and fuse-overlayfs as an ambient capability.
// Peer check: SO_PEERCRED is reported in the reader's user namespace, so
// below `podman unshare` the owner (the host user, mapped to 0) is uid 0,
// exactly the helper's own euid, which is what the server allows; every
// other host user shows as the overflow uid 65534 and the user's subuids
// as 1..65536, all refused. Requests carry only ids and a profile name.
#ifndef LAZARET_HELPER_MOUNT_MOUNTHELPER_H_
#define LAZARET_HELPER_MOUNT_MOUNTHELPER_H_

#include <sys/capability.h>

#include <array>

#include "absl/status/status.h"
#include "services/common/service_catalog.h"
#include "services/common/service_main.h"

namespace lazaret::mounthelper {

// The capabilities this process keeps; everything else is dropped at start.
// The set is written in the service catalog (services/common/service_catalog.h);
// deploy/capabilities.toml restates it and a test compares the two.
inline constexpr const auto& kCapabilities = kMountHelperCapabilities;
// Held permitted, for the overlay alone: handed to fuse-overlayfs, and
// effective only in the thread that creates a kernel overlay, for that one
// call (the kernel's overlayfs keeps the creator's credentials). Both serve
// the sandbox's file operations, which need to create files as their
// owners (CHOWN), reach files of any owner (DAC_OVERRIDE, FOWNER) and keep
// setgid bits (FSETID). Rootless these are capabilities of the user's own
// user namespace, over its subuids only. Besides the overlay the helper
// raises some of them (thread_caps.h), in the one thread and for the one
// step, for exactly: giving the upper layer's root the image's owner, mode
// and times (CHOWN, FOWNER: overlay_paths.h MatchRootToLower), opening that
// root and walking the layer for `state show` (DAC_OVERRIDE), and removing
// it for `state reset` (DAC_OVERRIDE, FOWNER: layer_stats.h).
inline constexpr std::array<cap_value_t, 4> kDelegatedCapabilities = {CAP_CHOWN, CAP_DAC_OVERRIDE,
                                                                      CAP_FOWNER, CAP_FSETID};

ServiceSpec Spec();

// Asks for SIGTERM when the parent exits: rootless, the parent is
// `podman unshare`, which does not pass on the supervisor's SIGTERM, so
// without this a stopped or restarted helper would outlive it. False when
// the parent is already gone. Call first thing in main().
bool ExitWithParent();

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::mounthelper

#endif
