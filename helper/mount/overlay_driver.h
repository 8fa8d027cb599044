// Which overlay implementation mounts a persistent directory: the kernel's
// overlayfs (allowed in the user namespace of `podman unshare` since Linux
// 5.11) or fuse-overlayfs. Runs in lazaret-mount-helper. The helper's
// preference comes from LAZARET_OVERLAY (auto, kernel, fuse-overlayfs);
// each upper layer records the driver that first mounted it in
// <profile_dir>/<name>_layer, and is mounted by that driver ever after, so
// a layer is never read by an implementation that did not write it.
#ifndef LAZARET_HELPER_MOUNT_OVERLAY_DRIVER_H_
#define LAZARET_HELPER_MOUNT_OVERLAY_DRIVER_H_

#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"

namespace lazaret::mounthelper {

enum class OverlayDriver { kKernel, kFuse };

// What the helper mounts a layer with when it has no record yet.
enum class OverlayPreference {
  kAuto,    // the kernel's, and fuse-overlayfs where the kernel refuses
  kKernel,  // the kernel's only
  kFuse,    // fuse-overlayfs only
};

inline constexpr char kOverlayEnv[] = "LAZARET_OVERLAY";

// "kernel" or "fuse-overlayfs": the record's content and what logs and
// `lazaret state show` print.
absl::string_view DriverName(OverlayDriver driver);

// LAZARET_OVERLAY's value: empty or "auto", "kernel", "fuse-overlayfs";
// anything else is INVALID_ARGUMENT naming the accepted values.
absl::StatusOr<OverlayPreference> ParsePreference(absl::string_view value);

// The record of the layer whose name (PersistName) is `base`, below the
// opened profile directory; nullopt when there is none. A record that is
// not a regular file of the helper's, or names no driver, is an error.
absl::StatusOr<std::optional<OverlayDriver>> ReadLayerDriver(const fs::DirFd& profile,
                                                             const std::string& base);
absl::Status WriteLayerDriver(const fs::DirFd& profile, const std::string& base,
                              OverlayDriver driver);
// Removes the record (a reset layer is recorded again by its next mount).
absl::Status RemoveLayerDriver(const fs::DirFd& profile, const std::string& base);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_OVERLAY_DRIVER_H_
