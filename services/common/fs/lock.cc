#include "services/common/fs/lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::fs {

absl::StatusOr<FileLock> FileLock::Acquire(const std::string& path, const LockOptions& options) {
  int flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
  if (options.create_new) flags |= O_EXCL;
  UniqueFd fd(open(path.c_str(), flags, options.mode));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("opening ", path), errno);
  const int op = LOCK_EX | (options.wait ? 0 : LOCK_NB);
  while (flock(fd.get(), op) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat(path, " is locked by another process"));
    }
    return ErrnoStatus(absl::StrCat("locking ", path), errno);
  }
  return FileLock(std::move(fd));
}

bool IsLockHeld(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return false;
  return flock(fd.get(), LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

}  // namespace lazaret::fs
