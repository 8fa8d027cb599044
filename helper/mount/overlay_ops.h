// What lazaret-mount-helper does to the system, behind an interface so the
// bookkeeping can be tested with fakes: `podman image mount` / `unmount` of
// the sandbox image (the lower layers), an overlay mounted (the kernel's
// overlayfs through the descriptor-based mount API, or fuse-overlayfs
// started) and unmounted, and whether a merged directory is a mount. Runs in lazaret-mount-helper
// (CAP_SYS_ADMIN; rootless inside `podman unshare`). Programs are found in
// fixed system directories, never through $PATH, and started with an argv
// built from checked values only: image ids are 64 hex digits, every
// directory is passed as a /proc/self/fd path of a descriptor opened and
// checked by overlay_paths.h, so no path the sandbox could change is looked
// up again and no option string carries a user-chosen byte.
#ifndef LAZARET_HELPER_MOUNT_OVERLAY_OPS_H_
#define LAZARET_HELPER_MOUNT_OVERLAY_OPS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "helper/mount/overlay_driver.h"
#include "helper/mount/overlay_paths.h"
#include "services/common/fs/fd.h"

namespace lazaret::mounthelper {

// The process serving an overlay: fuse-overlayfs's; pid 0 for the
// kernel's overlayfs, which has none.
struct FuseProcess {
  pid_t pid = 0;
  uint64_t start_time = 0;
};

class OverlayOps {
 public:
  virtual ~OverlayOps() = default;
  // `podman image mount <image_id>`: the image's root directory, opened.
  // Each call is one more mount count of the image in podman's storage.
  virtual absl::StatusOr<fs::DirFd> MountImage(const std::string& image_id) = 0;
  virtual absl::Status UnmountImage(const std::string& image_id) = 0;
  // Mounts `lower` below `overlay`'s upper and work directories at its
  // merged directory with `driver`, and returns once it is mounted.
  // UNIMPLEMENTED when the kernel refuses the overlay (no overlayfs, not in
  // this user namespace, or not over these file systems), so a caller may
  // try fuse-overlayfs instead.
  virtual absl::StatusOr<FuseProcess> MountOverlay(const fs::DirFd& lower,
                                                   const CheckedOverlay& overlay,
                                                   OverlayDriver driver) = 0;
  // Unmounts `merged` (when mounted) and waits for `process` to exit.
  virtual absl::Status UnmountOverlay(const std::string& merged, FuseProcess process) = 0;
  // Whether `merged` is a mount point now.
  virtual bool IsMounted(const std::string& merged) = 0;
};

// The real one.
std::unique_ptr<OverlayOps> MakeSystemOverlayOps();

// The start time of `pid` (field 22 of /proc/<pid>/stat), 0 when gone.
uint64_t ProcessStartTime(pid_t pid);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_OVERLAY_OPS_H_
