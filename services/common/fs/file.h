// Reading and writing regular files through directory descriptors. Used in
// every Lazaret process, also on files the sandbox wrote: a file is opened
// with O_PATH|O_NOFOLLOW first and reopened for reading only after fstat
// says it is a regular file, so a symlink is never followed and a FIFO or
// device node is never opened. Nothing here stats a path and then opens it
// by name. Writes go through a temporary file and rename, so a reader sees
// the old contents or the new, never a part.
#ifndef LAZARET_SERVICES_COMMON_FS_FILE_H_
#define LAZARET_SERVICES_COMMON_FS_FILE_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/common/fs/fd.h"

namespace lazaret::fs {

// Writes all of `data` to `fd`, retrying short writes and EINTR.
absl::Status WriteAll(int fd, absl::string_view data);

// Reads `fd` to its end, at most `max_bytes` (more is ResourceExhausted).
absl::StatusOr<std::string> ReadAll(int fd, uint64_t max_bytes, const std::string& what);

// Opens the regular file `name` below `dir` for reading, never following a
// symlink and never opening anything else; `st` (optional) receives its
// stat. A file the caller owns but may not read (an agent can leave mode
// 000 files owned by the developer) gets u+r through the checked inode.
absl::StatusOr<UniqueFd> OpenRegularFileAt(const DirFd& dir, const std::string& name,
                                           struct stat* st = nullptr);

// The contents of the regular file `name` below `dir` (at most `max_bytes`;
// larger is ResourceExhausted).
absl::StatusOr<std::string> ReadRegularFileAt(const DirFd& dir, const std::string& name,
                                              uint64_t max_bytes);

// ReadRegularFileAt for a path whose directories the caller trusts: they
// are looked up as usual, symlinks followed; only the last component is
// opened without following.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes);

// Whether a write reaches the disk before it replaces the old file: kSync
// for records that must survive a crash (the trust store); kNoSync for
// state rewritten often that is rebuilt anyway.
enum class Durability { kNoSync, kSync };

// A file of the host that the user or the system provides (an apt sources
// list, a shared library, /etc/subuid): `path` is looked up as any path is,
// symlinks followed, and only a regular file is read (opened O_NONBLOCK
// first, so a FIFO never blocks and nothing else is read). At most
// `max_bytes`. Never for a file the sandbox can write.
inline constexpr uint64_t kMaxHostFileBytes = 1ull << 30;
absl::StatusOr<std::string> ReadHostFile(const std::string& path,
                                         uint64_t max_bytes = kMaxHostFileBytes);

// Creates or replaces `name` in `dir` (a directory the caller owns) with
// `contents` and `mode`, through a temporary file created O_EXCL|O_NOFOLLOW
// next to it and renamed over `name`.
absl::Status WriteFileAtomicAt(const DirFd& dir, const std::string& name,
                               absl::string_view contents, mode_t mode = 0644,
                               Durability durability = Durability::kNoSync);

// Creates `name` in `dir` with `contents` and exactly `mode` (the umask
// neither widens nor narrows it), failing if anything - a file, a
// symlink - is already there (O_CREAT|O_EXCL).
absl::Status WriteNewFileAt(const DirFd& dir, const std::string& name, absl::string_view contents,
                            mode_t mode);

// Copies the regular file `name` of `src` (opened as OpenRegularFileAt
// does: never a symlink, FIFO or device) to `dst_name` in `dst` the way
// WriteFileAtomicAt writes, streaming, with `mode`. At most `max_bytes`:
// a larger file, or one that grows larger while copied, is
// ResourceExhausted. Returns the bytes copied.
absl::StatusOr<uint64_t> CopyRegularFileAt(const DirFd& src, const std::string& name,
                                           const DirFd& dst, const std::string& dst_name,
                                           uint64_t max_bytes, mode_t mode = 0644);

// WriteFileAtomicAt for a path whose directories the caller trusts (looked
// up as ReadRegularFile does).
absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents,
                             mode_t mode = 0644, Durability durability = Durability::kNoSync);

// What identifies one version of the regular file `name` in `dir` without
// reading it: "<size> <mtime> <ctime> <inode>". nullopt when it is not a
// regular file. A writer can set an mtime back, but any write or rename
// moves the ctime, which it cannot set.
std::optional<std::string> RegularFileFingerprint(const DirFd& dir, const std::string& name);

// The target text of the symlink `name` in the directory `dirfd` (with
// name "", of `dirfd` itself: an O_PATH|O_NOFOLLOW descriptor of the
// link), never followed. A target longer than PATH_MAX is refused.
// `what` names the link in messages.
absl::StatusOr<std::string> ReadLinkAt(int dirfd, const std::string& name,
                                       const std::string& what);

// The name of the temporary file WriteFileAtomicAt uses for `name`.
std::string TemporaryNameFor(const std::string& name);

// What a file of type `mode` (st_mode) is, for messages: "directory",
// "symlink", "FIFO", "socket", "character device", "block device", or
// "special file" (a regular file included).
const char* FileTypeName(mode_t mode);

}  // namespace lazaret::fs

#endif  // LAZARET_SERVICES_COMMON_FS_FILE_H_
