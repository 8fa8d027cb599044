// Owned descriptors, and directory descriptors opened without following
// symlinks: the handles every other part of lazaret_fs works through. Used
// in every Lazaret process, on the host and inside the sandbox
// (lazaret-sandbox-init). Trusts nothing about the names it is given beyond
// what each function states; a name is one path component unless a
// function says otherwise.
#ifndef LAZARET_SERVICES_COMMON_FS_FD_H_
#define LAZARET_SERVICES_COMMON_FS_FD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace lazaret::fs {

// Closes a descriptor on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release();
  // Closes the descriptor held (if any) and holds `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// An owned directory descriptor opened with O_DIRECTORY|O_NOFOLLOW.
class DirFd {
 public:
  DirFd() = default;
  DirFd(DirFd&&) noexcept = default;
  DirFd& operator=(DirFd&&) noexcept = default;

  // Opens an absolute path whose every component the caller trusts (a path
  // Lazaret itself created or the user configured), refusing a symlink as
  // the last component.
  static absl::StatusOr<DirFd> Open(const std::string& path);
  // Opens a directory the user configured or Lazaret derived from one (a
  // data or configuration directory), following symlinks as any lookup
  // does, so that a symlinked ~/.config/lazaret stays usable.
  static absl::StatusOr<DirFd> OpenTrusted(const std::string& path);
  // Takes ownership of `fd`, which must be a directory descriptor.
  static DirFd Adopt(int fd) { return DirFd(fd); }
  // Opens `name` (one component) below this directory, never following a
  // symlink. Changes nothing: a directory the caller may not read is an
  // error (EACCES), never made readable. For trees the developer owns (the
  // workspace, rw volumes).
  absl::StatusOr<DirFd> OpenChild(const std::string& name) const;
  // OpenChild for trees that are Lazaret's own state or that only the
  // sandbox writes and Lazaret sweeps or removes: a directory the caller
  // owns but lacks u+rwx on (with rootless podman the agent can leave 0000
  // or 0555 directories owned by the developer) gets u+rwx, so that it can
  // be read and its entries removed. Never use it on the workspace: it
  // changes the mode of what it opens.
  absl::StatusOr<DirFd> OpenOwnChild(const std::string& name) const;

  int get() const { return fd_.get(); }

 private:
  explicit DirFd(int fd) : fd_(fd) {}
  UniqueFd fd_;
};

// The outcome of OpenBeneath: a descriptor, or the errno that refused it
// (callers tell "not there", ENOENT, from "leaves the tree", EXDEV).
struct OpenedBeneath {
  UniqueFd fd;
  int error = 0;
};

// openat2(2) of `path` (relative; several components, "" for `dir_fd`
// itself) below `dir_fd`, with open `flags` (O_CLOEXEC is added) and
// `resolve` (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, ...), so the kernel, not
// a string check, keeps the lookup inside the tree.
OpenedBeneath OpenBeneath(int dir_fd, const std::string& path, uint64_t flags, uint64_t resolve);

// Adds `bits` to the mode of what `fd` (an O_PATH or ordinary descriptor)
// refers to, when the caller owns it and it is not a symlink; through the
// descriptor's /proc/self/fd link, so the checked inode is changed, never a
// name. Best effort.
void AddOwnerPermissions(int fd, unsigned bits);

}  // namespace lazaret::fs

#endif  // LAZARET_SERVICES_COMMON_FS_FD_H_
