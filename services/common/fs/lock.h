// Advisory locks (flock) on lock files, for every Lazaret process that
// serialises with another: the supervisor's lock, a session's owner lock,
// the Git Shadow's state locks, the trust store. Lock files live in
// directories the caller owns; the last component is never followed.
#ifndef LAZARET_SERVICES_COMMON_FS_LOCK_H_
#define LAZARET_SERVICES_COMMON_FS_LOCK_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"

namespace lazaret::fs {

struct LockOptions {
  // Wait for a lock held elsewhere (EINTR retried) instead of failing with
  // Unavailable at once.
  bool wait = true;
  // Create the file and fail if it exists (O_EXCL), for a lock that must
  // be new; otherwise an existing file is used and a missing one created.
  bool create_new = false;
  // The mode of a file created here.
  mode_t mode = 0600;
};

// An exclusive flock on one file, held until destruction (closing the
// descriptor releases it; the file stays, so that a second locker can never
// lock a new file at the same path while the first still holds the old).
class FileLock {
 public:
  // Opens `path` (O_RDWR|O_CREAT|O_NOFOLLOW) and locks it. With wait=false,
  // a lock held by another open file is Unavailable.
  static absl::StatusOr<FileLock> Acquire(const std::string& path, const LockOptions& options);

  // The locked file's descriptor (to record a pid in it, say).
  int fd() const { return fd_.get(); }

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

// True while another open file holds a lock on `path`: probes with a shared
// non-blocking flock on a descriptor of its own, which it then closes.
// False when the file does not exist or cannot be opened.
bool IsLockHeld(const std::string& path);

}  // namespace lazaret::fs

#endif  // LAZARET_SERVICES_COMMON_FS_LOCK_H_
