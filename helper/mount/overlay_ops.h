// What lazaret-mount-helper does to the system, behind an interface so the
// bookkeeping can be tested with fakes: `podman image mount` / `unmount` of
// the sandbox image (the lower layers), an overlay mounted (the kernel's
// overlayfs through the descriptor-based mount API, or fuse-overlayfs
// started) and unmounted, whether a merged directory is a mount, and the
// profile's capped file system that holds the upper layers (capped_fs.h:
// made, resized, mounted by a loop device or fuse2fs, unmounted). Runs in lazaret-mount-helper
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
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "helper/mount/capped_fs.h"
#include "helper/mount/child_process.h"
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

  // Mounts the profile's capped file system (capped_fs.h) at
  // <profile_dir>/persist, whose root is then 0700 (unless `read_only`).
  // With `cap_bytes` it is first made that big (created, grown or shrunk:
  // PrepareCappedImage); without, it is mounted as it is (NOT_FOUND when
  // there is no image). `profile_name` is for the messages.
  virtual absl::StatusOr<CappedMount> MountCapped(const CheckedProfile& profile,
                                                  const std::string& profile_name,
                                                  std::optional<uint64_t> cap_bytes, uid_t owner,
                                                  bool read_only) = 0;
  // Unmounts <profile_dir>/persist (when mounted) and waits for its
  // fuse2fs; retries for up to `busy_wait` while it is busy.
  virtual absl::Status UnmountCapped(const std::string& profile_dir, CappedMount mount,
                                     std::chrono::milliseconds busy_wait) = 0;
  // What the mounted capped file system holds.
  virtual absl::StatusOr<CappedUsage> CappedUsageOf(const CheckedProfile& profile,
                                                    uid_t owner) = 0;
  // Whether <profile_dir>/persist.img exists.
  virtual bool HasCappedImage(const CheckedProfile& profile) = 0;
};

// The real one; `capped_kind`: how capped file systems are mounted.
std::unique_ptr<OverlayOps> MakeSystemOverlayOps(CappedKind capped_kind = DefaultCappedKind());

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_OVERLAY_OPS_H_
