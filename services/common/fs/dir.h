// Creating, listing and removing directory trees through descriptors. Used
// in every Lazaret process. Creation and removal never follow a symlink
// below the directory descriptor they start from; removal never follows
// one anywhere, so a tree the sandbox could write can be removed without
// reaching outside it.
#ifndef LAZARET_SERVICES_COMMON_FS_DIR_H_
#define LAZARET_SERVICES_COMMON_FS_DIR_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"

namespace lazaret::fs {

// mkdir -p of `rel` (components separated by '/', no "." or "..") below
// `base`: each missing component is created with `mode` (less the umask),
// each component is then opened with O_NOFOLLOW, so a symlink anywhere
// below `base` is an error, never followed. Returns the last directory.
// An empty `rel` opens `base` again.
absl::StatusOr<DirFd> MakeDirsAt(const DirFd& base, const std::string& rel, mode_t mode);

// MakeDirsAt for trees that are Lazaret's own or that only the sandbox
// writes (DirFd::OpenOwnChild): each component is opened with OpenOwnChild,
// so one the caller owns but lacks u+rwx on gets it. Never for the
// workspace.
absl::StatusOr<DirFd> MakeOwnDirsAt(const DirFd& base, const std::string& rel, mode_t mode);

// mkdir -p of the absolute path `path` (IsCleanAbsolutePath), for paths the
// user configured or Lazaret derived from them (its data and state
// directories): existing components, the last one included, are followed
// like mkdir -p does (a symlinked ~/.local stays usable); missing ones are
// created with `mode`. A caller that must refuse a symlinked last
// component (the private runtime directory) checks it with lstat.
absl::StatusOr<DirFd> MakeDirs(const std::string& path, mode_t mode);

// The names in `dir` (not "." or ".."), through a descriptor of its own so
// the offset of `dir` is not shared.
absl::StatusOr<std::vector<std::string>> ListNames(const DirFd& dir);

// Removes `name` below `dir`, recursively for a directory, never following
// a symlink (a symlink is removed, not its target). Directories below are
// opened with OpenOwnChild, so ones the caller owns but may not read or
// write are made removable. Missing is fine.
absl::Status RemoveTreeAt(const DirFd& dir, const std::string& name);

// Removes everything below `dir`, keeping `dir` itself.
absl::Status RemoveContents(const DirFd& dir);

// RemoveTreeAt for an absolute path whose parent the caller trusts.
absl::Status RemoveTree(const std::string& path);

}  // namespace lazaret::fs

#endif  // LAZARET_SERVICES_COMMON_FS_DIR_H_
