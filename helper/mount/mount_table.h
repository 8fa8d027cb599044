// The helper's bookkeeping of mounted overlays and the sessions holding
// them, without any I/O: which overlays an attach must mount, share or
// refuse, and which ones lost their last holder. Runs in
// lazaret-mount-helper; its callers hold the lock and check every id and
// path before it reaches here.
#ifndef LAZARET_HELPER_MOUNT_MOUNT_TABLE_H_
#define LAZARET_HELPER_MOUNT_MOUNT_TABLE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "helper/mount/capped_fs.h"

namespace lazaret::mounthelper {

// One mounted overlay: <profile_dir>/<name>_merged over the image's D.
struct Mounted {
  std::string profile;
  std::string profile_dir;
  std::string directory;  // D
  std::string merged;
  std::string image_id;
  pid_t pid = 0;                  // the fuse-overlayfs process
  uint64_t start_time = 0;        // its start time (/proc/<pid>/stat), against pid reuse
  std::set<std::string> holders;  // session ids
};

class MountTable {
 public:
  using Key = std::pair<std::string, std::string>;  // profile_dir, directory

  // OK when `session` may hold overlays of `profile_dir` over `image_id`:
  // FAILED_PRECONDITION naming the sessions when another session holds one
  // of that profile over another image.
  absl::Status CheckAttach(const std::string& profile_dir, const std::string& image_id,
                           const std::string& session) const;

  // The mounted overlay of (profile_dir, directory), or null.
  Mounted* Find(const std::string& profile_dir, const std::string& directory);
  void Add(Mounted m);
  // Removes the entry (after it was unmounted).
  void Remove(const std::string& profile_dir, const std::string& directory);

  // Drops `session` from every overlay it holds; returns the keys of those
  // left without a holder (to be unmounted).
  std::vector<Key> DropHolder(const std::string& session);
  // The keys of overlays without any holder.
  std::vector<Key> Unheld() const;
  // Every session holding an overlay of `profile_dir` (of `directory` when
  // not empty).
  std::set<std::string> HoldersOf(const std::string& profile_dir,
                                  const std::string& directory = "") const;
  // Every session holding anything.
  std::set<std::string> AllHolders() const;

  const std::map<Key, Mounted>& entries() const { return entries_; }

  // The capped file system mounted for `profile_dir` (capped_fs.h), or
  // null. It stays mounted while any overlay of the profile is.
  const CappedMount* FindCapped(const std::string& profile_dir) const;
  void AddCapped(const std::string& profile_dir, CappedMount m);
  void RemoveCapped(const std::string& profile_dir);
  // Whether any overlay of `profile_dir` is mounted.
  bool HasOverlays(const std::string& profile_dir) const;
  // The profile directories with a capped file system and no overlay.
  std::vector<std::string> CappedWithoutOverlays() const;
  const std::map<std::string, CappedMount>& capped() const { return capped_; }

 private:
  std::map<Key, Mounted> entries_;
  std::map<std::string, CappedMount> capped_;
};

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_MOUNT_TABLE_H_
