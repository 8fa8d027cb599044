// The host directories of one persistent directory's overlay, checked
// before anything is mounted or removed there. Runs in lazaret-mount-helper
// (CAP_SYS_ADMIN). Trusts data_root and the profile directory's name only
// as configd resolved them; trusts nothing found on disk: every component
// below data_root must be a real directory (never a symlink) owned by the
// helper's user, and every path is derived here (persist_layout.h), never
// taken from a request. Only a CheckedOverlay can be mounted.
#ifndef LAZARET_HELPER_MOUNT_OVERLAY_PATHS_H_
#define LAZARET_HELPER_MOUNT_OVERLAY_PATHS_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"
#include "services/common/persist_layout.h"

namespace lazaret::mounthelper {

// A profile directory, open and checked: one component below data_root, a
// real directory owned by the helper's user.
struct CheckedProfile {
  std::string profile_dir;
  fs::DirFd profile;
};

// Checks that `profile_dir` is one component below `data_root`, opens
// data_root (as the user configured it, symlinks followed; made like
// mkdir -p, mode 0700, when `create`) and below it, without following a
// symlink, the profile directory (created 0700 when `create`, else
// NOT_FOUND), which must be owned by `owner`.
absl::StatusOr<CheckedProfile> CheckProfile(const std::string& data_root,
                                            const std::string& profile_dir, uid_t owner,
                                            bool create);
// Opens <profile_dir>/persist, the capped file system's mount point (or,
// once mounted, its root), created 0700 when `create`; owned by `owner`.
absl::StatusOr<fs::DirFd> OpenPersistDir(const CheckedProfile& profile, uid_t owner, bool create);

// A persistent directory whose profile, upper, work and merged directories
// are open (O_DIRECTORY|O_NOFOLLOW) and, all but the upper layer's root,
// were checked to be owned by `owner`. The upper layer's root is D's root
// inside the sandbox: its owner and mode are the image's or the sandbox's.
struct CheckedOverlay {
  std::string directory;  // D, inside the container
  std::string profile_dir;
  PersistPaths paths;
  fs::DirFd profile;
  fs::DirFd persist;  // the capped file system's root, holding changes and work
  fs::DirFd changes;
  fs::DirFd work;
  fs::DirFd merged;
};

// Checks `directory` (CheckPersistentDir) and the profile (CheckProfile),
// then opens, without following any symlink, persist/ and in it
// <name>_changes and <name>_work, and <name>_merged in the profile
// directory, creating missing ones with mode 0700 when `create` (else
// NOT_FOUND). Each must be a directory owned by `owner`, except
// <name>_changes (see CheckedOverlay). The caller makes sure the capped
// file system is mounted at persist/ first: this only opens what is there.
absl::StatusOr<CheckedOverlay> CheckOverlay(const std::string& data_root,
                                            const std::string& profile_dir,
                                            const std::string& directory, uid_t owner, bool create);

// Gives the upper layer's root (the root of D in the sandbox: an overlay
// shows its upper root's attributes) the mode, owner, group and times of
// the image's D, `lower`, so a persistent /usr is the image's 0755 root:root
// and not the 0700 directory the helper made. Attributes the sandbox
// changed since the helper last set them (recorded in <name>_root) stay the
// sandbox's: owner and mode together, the times on their own (creating an
// entry in D changes its mtime). Call before mounting.
absl::Status MatchRootToLower(const fs::DirFd& lower, const CheckedOverlay& o);
// Drops <name>_root (a reset: the next mount gives the image's again).
absl::Status RemoveRootRecord(const fs::DirFd& profile, const std::string& base);

// Whether D's layer from before the size cap, <profile_dir>/<name>_changes,
// exists (of any type: it is never followed).
bool HasUncappedLayer(const CheckedProfile& profile, const std::string& directory);
// Removes <name>_changes and <name>_work from the profile directory (a
// reset): their content at any depth, then the directories themselves.
absl::Status RemoveUncappedLayers(const CheckedProfile& profile, const std::string& directory);

// The image whose D a layer was last mounted over (<name>_image), kept so
// `state show` can compare the layer with that image's D.
absl::Status WriteImageRecord(const fs::DirFd& profile, const std::string& base,
                              const std::string& image_id);
// The recorded id; empty when there is none or it is not 64 hex digits.
std::string ReadImageRecord(const fs::DirFd& profile, const std::string& base);
absl::Status RemoveImageRecord(const fs::DirFd& profile, const std::string& base);

// Opens `rel` (a clean absolute path inside the image, "/usr") below the
// image's root `root_fd` with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS: the lower
// layer. FAILED_PRECONDITION naming the image when it has no such directory
// (or it is a symlink there, as /lib in a merged-/usr image).
absl::StatusOr<fs::DirFd> OpenLowerDir(int root_fd, const std::string& rel,
                                       const std::string& image_id);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_OVERLAY_PATHS_H_
