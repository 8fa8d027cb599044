// What an overlay's upper layer holds: size, entry count, the paths added
// or changed and those deleted (fuse-overlayfs 1.10 whiteouts: a 0/0
// character device - measured rootful and rootless on kernel 6.18, which
// lets a user namespace create whiteouts - or, where mknod is refused, a
// ".wh.<name>" file). Runs in lazaret-mount-helper. The
// layer was written by the sandbox: the walk goes through descriptors and
// never follows a symlink, and a name is only ever reported, not used.
#ifndef LAZARET_HELPER_MOUNT_LAYER_STATS_H_
#define LAZARET_HELPER_MOUNT_LAYER_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"

namespace lazaret::mounthelper {

inline constexpr size_t kMaxListedPaths = 20;

struct LayerStats {
  uint64_t bytes = 0;                // apparent size of every non-directory entry
  uint64_t files = 0;                // entries, directories included
  std::vector<std::string> changed;  // relative to D, sorted, at most kMaxListedPaths
  std::vector<std::string> deleted;
  uint64_t changed_total = 0;
  uint64_t deleted_total = 0;
};

absl::StatusOr<LayerStats> StatLayer(const fs::DirFd& upper);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_LAYER_STATS_H_
