// The building blocks of a sandbox's mounts: the profile's volumes and
// persistent directories as bind mounts, and one mount in podman's syntax.
// Runs in the `lazaret` CLI on the host. Pure functions over the profile
// lazaret-configd resolved (host paths already canonical; re-checked by
// profile.h before the sandbox starts), but for IsRealDirectory; plan.h
// puts the complete mount list of a session together from these.
#ifndef LAZARET_CLIENTS_LAZARET_SESSION_MOUNTS_H_
#define LAZARET_CLIENTS_LAZARET_SESSION_MOUNTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/lazaret/podman/mount_spec.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli::session {

// Where persistent directories live on the host:
// <profile_dir>/persist/<escaped container path>.
inline constexpr char kSandboxPersistDirName[] = "persist";

// "/root/.cache" -> "root%2F.cache": one directory name per container path,
// injective, never "." or "..".
std::string EscapePersistentPath(const std::string& container_path);

// persistent_dirs, for now: a host directory <profile_dir>/persist/<escaped>
// bound read-write at each path (starts empty; the fuse-overlayfs
// persistence that keeps image content comes later). Paths whose image
// content an empty bind would hide (/, /usr, /etc, /var, /bin, /sbin, /lib*,
// /boot) or that belong to Lazaret or the kernel (/workspace, /run/lazaret,
// /proc, /sys, /dev) are refused with the reason.
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

#endif  // LAZARET_CLIENTS_LAZARET_SESSION_MOUNTS_H_
