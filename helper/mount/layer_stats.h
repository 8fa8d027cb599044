// What an overlay's upper layer holds, and emptying it (`lazaret state
// show` and `lazaret state reset`). Runs in lazaret-mount-helper. The layer
// is the sandbox's writing, made as hostile as it likes: any owner and mode
// (0000 directories, other uids' 0711 ones, sticky ones), any depth, any
// name, special files, whiteout-shaped names. So the walk goes through
// descriptors only and never follows a symlink; it holds CAP_DAC_OVERRIDE
// (and, to remove, CAP_FOWNER) effective in its own thread for the walk
// (thread_caps.h; both are the helper's documented permitted set), so no
// mode or owner hides anything from it; it keeps a bounded number of
// directories open at any depth; a name is only ever reported, never used
// as a path.
//
// Whiteouts, per driver (the layer's `<name>_layer` record):
// - both: a 0/0 character device named X deletes X (the kernel's overlayfs
//   makes only these; fuse-overlayfs 1.10 makes them where mknod works -
//   measured rootful and rootless on kernel 6.18);
// - fuse-overlayfs: an entry of any type named ".wh.X" deletes X (its
//   get_whiteout_name(); it refuses to create such names through the
//   mount, so only it writes them), ".wh..wh..opq" makes its directory
//   opaque;
// - the kernel's overlayfs: ".wh.X" is an ordinary name the sandbox made;
// - opaque directories (the image's directory replaced as a whole): the
//   xattr trusted.overlay.opaque, user.overlay.opaque or (fuse-overlayfs)
//   user.fuseoverlayfs.opaque set to "y". The kernel's overlayfs sets it
//   only on a directory made where the image's was deleted;
//   fuse-overlayfs on every directory it makes, so there it tells nothing.
// - fuse-overlayfs 1.10 also writes a 0/0 ".wh..opq" in some directories
//   it made (measured: after a chmod of a directory holding files); by its
//   own rules that deletes ".opq", and it is reported so.
#ifndef LAZARET_HELPER_MOUNT_LAYER_STATS_H_
#define LAZARET_HELPER_MOUNT_LAYER_STATS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "helper/mount/overlay_driver.h"
#include "services/common/fs/fd.h"

namespace lazaret::mounthelper {

inline constexpr size_t kMaxListedPaths = 20;
// Directories deeper than this are counted as one entry each, not walked
// (reported in LayerStats::limit): the cost of keeping few descriptors
// open grows with the square of the depth.
inline constexpr int kMaxStatDepth = 4096;
// Entries walked per layer before the walk stops (reported).
inline constexpr uint64_t kMaxStatEntries = 20'000'000;
// Directories a walk keeps open at once, at any depth.
inline constexpr size_t kMaxOpenDirs = 64;

struct LayerStats {
  uint64_t bytes = 0;  // apparent size of every non-directory entry
  uint64_t files = 0;  // entries, directories included
  // Relative to D, sorted, at most kMaxListedPaths: entries added or
  // changed (every non-directory that is no whiteout, and every empty
  // directory - only a new or re-attributed directory is left empty in an
  // upper layer; compared with the image, every re-attributed directory
  // as "dir/ (mode 0755->0711, owner 0->4242)", D itself as "./ (...)",
  // and a new one only when empty), and those deleted (whiteouts; "dir/"
  // for a directory the kernel's overlayfs made opaque: the image's
  // content below it).
  std::vector<std::string> changed;
  std::vector<std::string> deleted;
  uint64_t changed_total = 0;
  uint64_t deleted_total = 0;
  // Empty, or what the walk did not cover and why (depth, entry count, a
  // directory that could not be opened or changed while it was walked).
  std::string limit;
};

// `driver`: who wrote the layer (nullopt: no record; read as the kernel's).
// `lower`: the image's same directory D (the overlay's lower layer), or
// null when there is none to compare with. With it, every directory of the
// upper layer, D itself included, is compared with the lower's directory
// at the same relative path: one whose mode, owner, group, ACLs or xattrs
// (other than the overlay drivers' own) differ is listed as changed, with
// what changed; one with no counterpart is new, and listed only when it is
// empty (its content is listed otherwise).
absl::StatusOr<LayerStats> StatLayer(const fs::DirFd& upper,
                                     std::optional<OverlayDriver> driver = std::nullopt,
                                     const fs::DirFd* lower = nullptr);

// Removes everything below `dir` (an upper or work layer), at any depth,
// whatever its modes and owners: a directory more than a few levels deep
// is first moved up to `dir` itself, so the walk never holds more than a
// few descriptors. The error names the entry that could not be removed.
absl::Status RemoveLayerContents(const fs::DirFd& dir);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_LAYER_STATS_H_
