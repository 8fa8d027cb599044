#include "services/supervisor/lock_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::supervisor {

absl::StatusOr<std::unique_ptr<LockFile>> LockFile::Acquire(const std::string& path) {
  fs::LockOptions options;
  options.wait = false;
  absl::StatusOr<fs::FileLock> lock = fs::FileLock::Acquire(path, options);
  if (absl::IsUnavailable(lock.status())) {
    char buf[32] = {};
    if (fs::UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)); fd.valid()) {
      (void)!pread(fd.get(), buf, sizeof(buf) - 1, 0);
    }
    return absl::AlreadyExistsError(
        absl::StrCat("Lazaret is already up (supervisor pid ", buf, ")"));
  }
  if (!lock.ok()) return lock.status();
  const std::string pid = absl::StrCat(getpid());
  if (ftruncate(lock->fd(), 0) != 0 || pwrite(lock->fd(), pid.data(), pid.size(), 0) < 0) {
    return ErrnoStatus(absl::StrCat("writing ", path), errno);
  }
  return std::unique_ptr<LockFile>(new LockFile(*std::move(lock)));
}

}  // namespace lazaret::supervisor
