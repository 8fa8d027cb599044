// The supervisor lock: <runtime_dir>/<kSupervisorLockFile>, held by
// lazaret-supervisord for its whole lifetime, taken before the capability
// drop. The file lives in the user's private runtime directory and is opened
// without following a symlink; what it holds (a pid) is only shown, never
// acted on.
#ifndef LAZARET_SERVICES_SUPERVISOR_LOCK_FILE_H_
#define LAZARET_SERVICES_SUPERVISOR_LOCK_FILE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "services/common/fs/lock.h"

namespace lazaret::supervisor {

// Holds the supervisor lock for the process lifetime: a second `lazaret up`
// (or a second supervisor) finds it taken and leaves the running set alone.
// The file is never removed: unlinking it would let a second supervisor
// lock a new file at the same path while someone still holds the old one,
// so that two supervisors each believe they own the runtime directory.
// Only the flock says who owns it; the pid written in it is informational.
class LockFile {
 public:
  // AlreadyExists (naming the holder's pid) when another process holds it.
  static absl::StatusOr<std::unique_ptr<LockFile>> Acquire(const std::string& path);

  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

 private:
  explicit LockFile(fs::FileLock lock) : lock_(std::move(lock)) {}
  fs::FileLock lock_;
};

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_LOCK_FILE_H_
