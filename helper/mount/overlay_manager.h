// The mount helper's logic: which overlays a session's attach mounts or
// shares, which ones a detach or an ended session unmounts, what a restart
// re-adopts, and the state commands (describe, reset). Runs in
// lazaret-mount-helper, called from its gRPC handlers and its registry
// watcher. Requests carry only ids (checked here); the profile comes from
// the SessionSource, every path from overlay_paths.h.
#ifndef LAZARET_HELPER_MOUNT_OVERLAY_MANAGER_H_
#define LAZARET_HELPER_MOUNT_OVERLAY_MANAGER_H_

#include <sys/types.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "helper/mount/layer_stats.h"
#include "helper/mount/mount_table.h"
#include "helper/mount/overlay_driver.h"
#include "helper/mount/overlay_ops.h"
#include "helper/mount/session_source.h"

namespace lazaret::mounthelper {

// Whether `id` is a full image id (64 lowercase hex digits).
bool IsValidImageId(const std::string& id);

struct DirectoryState {
  std::string directory;
  std::string changes;
  std::string overlay;  // the driver that wrote the layer (DriverName), empty before any
  LayerStats stats;
  bool mounted = false;
  std::vector<std::string> sessions;
  std::string uncapped_changes;  // a layer from before the cap, never mounted
};

// The profile's capped file system (capped_fs.h) against its cap.
struct PersistentUsage {
  bool exists = false;
  uint64_t cap_bytes = 0;  // as configured now
  CappedUsage usage;
  std::string held_by;  // CappedKindName, empty when not looked at
  std::string note;     // why the usage is missing, or empty
};

struct ProfileState {
  std::string profile;
  std::string profile_dir;
  std::vector<DirectoryState> directories;
  PersistentUsage usage;
};

// persistent_cap when configd did not say (an older configd): its default.
inline constexpr uint64_t kDefaultPersistentCap = uint64_t{4} << 30;

class OverlayManager {
 public:
  // `state_path`: the state file (state_file.h); empty keeps none. `owner`:
  // who must own every directory of profile state (the helper's euid).
  // `preference`: the driver of a layer that has no record yet
  // (overlay_driver.h).
  OverlayManager(SessionSource* sessions, OverlayOps* ops, std::string state_path, uid_t owner,
                 OverlayPreference preference = OverlayPreference::kAuto);

  // After a restart: reads the state file, re-adopts the overlays still
  // mounted and then does Cleanup.
  absl::Status Recover();

  // Mounts or shares the overlays of the session's profile (one per
  // persistent directory, in the profile's order).
  absl::StatusOr<std::vector<Mounted>> Attach(const std::string& session_id,
                                              const std::string& image_id);
  // The directories unmounted because `session_id` held them last.
  absl::StatusOr<std::vector<std::string>> Detach(const std::string& session_id);
  std::vector<Mounted> List();
  // Drops every holder the registry no longer lists as live, then
  // unmounts every overlay nobody holds.
  absl::StatusOr<std::vector<Mounted>> Cleanup();

  absl::StatusOr<ProfileState> Describe(const ProfileQuery& profile);
  // The directories emptied.
  absl::StatusOr<std::vector<std::string>> Reset(const ProfileQuery& profile,
                                                 const std::string& directory);

 private:
  // Unmounts the overlay and then its image mount; removes it from the table.
  absl::Status UnmountLocked(const MountTable::Key& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status MountLocked(const ProfileFacts& p, const std::string& directory,
                           const std::string& image_id, const std::string& session)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SaveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The driver of a layer: its record's, else the preference's (the
  // kernel's for auto). FAILED_PRECONDITION when the preference names
  // another driver than the record.
  absl::StatusOr<OverlayDriver> ChooseDriver(const std::optional<OverlayDriver>& recorded,
                                             const std::string& directory) const;
  absl::StatusOr<std::vector<Mounted>> CleanupLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Mounts the profile's capped file system, made to its cap, unless it
  // is mounted already; refuses a profile with layers from before the cap.
  absl::Status EnsureCappedLocked(const ProfileFacts& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unmounts the capped file system of `profile_dir` when none of its
  // overlays is mounted any more. While a copy of one of its overlays
  // lives on in another mount namespace (a sandbox's, for a moment after
  // it ended) it is busy: `wait` retries for a while (a reset), else it
  // stays mounted and recorded, for the next attach to use or a later
  // Cleanup to unmount.
  absl::Status ReleaseCappedLocked(const std::string& profile_dir, bool wait = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  SessionSource* const sessions_;
  OverlayOps* const ops_;
  const std::string state_path_;
  const uid_t owner_;
  const OverlayPreference preference_;
  std::mutex mu_;
  MountTable table_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_OVERLAY_MANAGER_H_
