// The size cap of a profile's persistent data (docs/persistence.md): one
// ext4 file system per profile in the image <profile_dir>/persist.img,
// preallocated to the whole cap, mounted at <profile_dir>/persist, holding
// every persistent directory's upper and work layers. Rootful the image is
// mounted through a loop device with the kernel's ext4; rootless (inside
// `podman unshare`, where ext4 cannot be mounted) fuse2fs serves it.
// Runs in lazaret-mount-helper. The image and the mount point are the
// helper's own files below a profile directory overlay_paths.h checked;
// they are opened without following symlinks and named to the programs run
// here (mkfs.ext4, e2fsck, resize2fs, fuse2fs) only as /proc/self/fd paths
// of those descriptors, with an argv of numbers and fixed words.
#ifndef LAZARET_HELPER_MOUNT_CAPPED_FS_H_
#define LAZARET_HELPER_MOUNT_CAPPED_FS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"

namespace lazaret::mounthelper {

inline constexpr uint64_t kMinPersistentCap = uint64_t{32} << 20;
inline constexpr uint64_t kMaxPersistentCap = uint64_t{16} << 40;
// The file system's block size: the image's size is a whole number of them.
inline constexpr uint64_t kCappedBlockSize = 4096;

enum class CappedKind { kLoop, kFuse2fs };
// "loop-mounted ext4 image" or "ext4 image served by fuse2fs".
std::string_view CappedKindName(CappedKind kind);
// Short names kept in the state file: "loop", "fuse2fs".
std::string_view CappedKindKey(CappedKind kind);
bool ParseCappedKind(std::string_view key, CappedKind* out);

// How the capped file system is mounted: the fuse2fs process serving it
// (pid 0 for a loop mount, which has none).
struct CappedMount {
  CappedKind kind = CappedKind::kLoop;
  pid_t pid = 0;
  uint64_t start_time = 0;
};

struct CappedUsage {
  uint64_t size_bytes = 0;  // the image's size: the cap it was made for
  uint64_t used_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t inodes_used = 0;
  uint64_t inodes_total = 0;
};

// Loop devices in the initial user namespace (rootful), fuse2fs in any
// other (rootless, below `podman unshare`).
CappedKind DefaultCappedKind();

// "4 GiB", "64 MiB", "1.5 GiB", "1234 B".
std::string CapText(uint64_t bytes);

// Makes <profile_dir>/persist.img (opened through `profile`, owned by
// `owner`, 0600) an ext4 of exactly `cap_bytes` (rounded down to whole
// blocks): made and preallocated when missing, grown (fallocate, e2fsck,
// resize2fs) or shrunk (e2fsck, resize2fs, truncate) otherwise. Call only
// while it is not mounted. RESOURCE_EXHAUSTED when the host lacks the free
// space to preallocate; FAILED_PRECONDITION when the data does not fit a
// smaller cap. `profile_name` is for the messages.
absl::Status PrepareCappedImage(const fs::DirFd& profile, const std::string& profile_dir,
                                const std::string& profile_name, uint64_t cap_bytes, uid_t owner);

// Opens the image read-write or read-only: a regular file owned by
// `owner` with one link, never through a symlink. NOT_FOUND when missing.
absl::StatusOr<fs::UniqueFd> OpenCappedImage(const fs::DirFd& profile,
                                             const std::string& profile_dir, uid_t owner,
                                             bool write);

// Mounts the image at `mount_point` (its path `mount_path`) with nodev and
// nosuid: a loop device and the kernel's ext4, or a fuse2fs process.
absl::StatusOr<CappedMount> MountCappedImage(const fs::UniqueFd& image,
                                             const fs::DirFd& mount_point,
                                             const std::string& mount_path, CappedKind kind,
                                             bool read_only);

// The messages the kernel left in a file system context (fsopen(2)): "e
// overlay: ..." lines, joined; for errors of the descriptor-based mount API.
std::string FsContextMessages(int fs_fd);
// Unmounts it and waits for its fuse2fs to exit (the image is complete
// only then). FAILED_PRECONDITION when still busy after `busy_wait`: an
// overlay whose upper layer is inside keeps it busy as long as any mount
// namespace still has a copy of that overlay (a sandbox's, for a moment
// after it ended). Never detached lazily: a second mount of the image
// while the first still lives would corrupt it.
absl::Status UnmountCappedImage(const std::string& mount_path, CappedMount mount,
                                std::chrono::milliseconds busy_wait);

// What the mounted file system at `mount_point` holds; size_bytes is the
// file system's own size here (the caller gives the image's).
absl::StatusOr<CappedUsage> CappedUsageOf(const fs::DirFd& mount_point);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_CAPPED_FS_H_
