// The building blocks of a sandbox's mounts: the profile's volumes and
// persistent directories (their overlays) as bind mounts, and one mount in podman's syntax.
// Runs in the session worker (lazaret-sessiond --session-worker) on the host. Pure functions over the profile
// lazaret-configd resolved (host paths already canonical; re-checked by
// profile.h before the sandbox starts), but for IsRealDirectory; plan.h
// puts the complete mount list of a session together from these.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_MOUNTS_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_MOUNTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/podman/mount_spec.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli::session {

// persistent_dirs: each D bound read-write over D from the merged directory
// of its overlay, PersistPathsFor(profile_dir, D).merged
// (services/common/persist_layout.h), which lazaret-mount-helper mounts
// before the sandbox starts (the image's D below, the profile's changes
// above). Refused with the reason: a path CheckPersistentDir refuses (/,
// what belongs to Lazaret or the kernel) and one directory inside another
// (/usr and /usr/local).
absl::StatusOr<std::vector<BindMount>> PlanPersistentDirs(
    const std::string& profile_dir, const google::protobuf::RepeatedPtrField<std::string>& dirs);

// The profile's volumes as bind mounts (host paths are canonical from
// configd).
std::vector<BindMount> ProfileVolumes(const lazaret::config::v1::ResolvedProfile& profile);

// True when `path` is a directory and not a symlink (lstat).
bool IsRealDirectory(const std::string& path);

// The podman arguments for one mount. Refuses paths podman's -v syntax
// cannot carry (':' anywhere, ',' in a tmpfs destination) and relative
// paths.
absl::StatusOr<std::vector<std::string>> MountArgs(const Mount& mount);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_MOUNTS_H_
