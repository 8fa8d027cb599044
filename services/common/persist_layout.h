// Where a profile's persistent directory lives on the host (SPEC 4.3.1):
// for a directory D inside the container, <profile_dir>/persist/<name>_changes
// (the overlay's upper layer) and <profile_dir>/persist/<name>_work (its work
// directory), both inside the profile's capped file system (the image
// <profile_dir>/persist.img mounted at <profile_dir>/persist), and
// <profile_dir>/<name>_merged (the mount point bound over D), with <name> D
// escaped so that every D gets its own names ("/usr" -> "usr",
// "/root/.cache" -> "root%2F.cache"). Shared by lazaret-mount-helper, which derives every path
// it touches from here, and `lazaret run`, which plans the binds. Pure; the
// directory must already be a clean absolute path (CheckPersistentDir).
#ifndef LAZARET_SERVICES_COMMON_PERSIST_LAYOUT_H_
#define LAZARET_SERVICES_COMMON_PERSIST_LAYOUT_H_

#include <string>

#include "absl/status/status.h"

namespace lazaret {

// D escaped for a file name: [A-Za-z0-9_.-] kept, every other byte (the
// inner '/' included) as %XX; never empty, ".", or "..".
std::string PersistName(const std::string& directory);

// The names, in the profile directory, of the capped file system's image
// and of its mount point.
inline constexpr char kPersistImageName[] = "persist.img";
inline constexpr char kPersistMountName[] = "persist";

struct PersistPaths {
  std::string changes;  // upper layer, inside the capped file system
  std::string work;     // overlay work directory, inside the capped file system
  std::string merged;   // mount point, bound over D in the sandbox
};
PersistPaths PersistPathsFor(const std::string& profile_dir, const std::string& directory);

// <profile_dir>/persist.img and <profile_dir>/persist.
std::string PersistImagePath(const std::string& profile_dir);
std::string PersistMountPath(const std::string& profile_dir);
// Where D's upper layer was kept before the size cap,
// <profile_dir>/<name>_changes (and <name>_work): never mounted again,
// only reported and removed by a reset.
PersistPaths UncappedPathsFor(const std::string& profile_dir, const std::string& directory);

// Whether D may be a persistent directory: a clean absolute path, not "/",
// and not inside what belongs to Lazaret or the kernel (/workspace,
// /run/lazaret, /proc, /sys, /dev). System directories (/usr, /etc, /var,
// /opt, ...) are allowed: the overlay keeps the image's content below.
absl::Status CheckPersistentDir(const std::string& directory);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_PERSIST_LAYOUT_H_
