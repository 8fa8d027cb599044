// The mount helper's record of what it mounted, kept in its own private
// directory so a helper started after a crash or kill can re-adopt the
// overlays live sessions still hold and unmount the rest. Runs in
// lazaret-mount-helper. The file is the helper's own (0600 in a 0700
// directory); what it names is still checked again before use (ids and
// paths re-derived, mounts re-checked).
#ifndef LAZARET_HELPER_MOUNT_STATE_FILE_H_
#define LAZARET_HELPER_MOUNT_STATE_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "helper/mount/mount_table.h"

namespace lazaret::mounthelper {

// <runtime_dir>/mount-helper/mounts; the directory is created private.
absl::StatusOr<std::string> StateFilePath(const std::string& runtime_dir);

// Writes `table` atomically (a temporary file renamed over), mode 0600.
absl::Status SaveState(const std::string& path, const MountTable& table);

struct SavedCapped {
  std::string profile_dir;
  CappedMount mount;
};
struct SavedState {
  std::vector<Mounted> mounts;
  std::vector<SavedCapped> capped;
};

// What was saved; empty when there is no file. A capped record of an
// unknown kind is dropped.
absl::StatusOr<SavedState> LoadState(const std::string& path);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_STATE_FILE_H_
