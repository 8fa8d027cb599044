#include "services/supervisor/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::supervisor {

absl::StatusOr<std::unique_ptr<LockFile>> LockFile::Acquire(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", path), errno);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    char buf[32] = {};
    (void)!pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    if (e == EWOULDBLOCK) {
      return absl::AlreadyExistsError(
          absl::StrCat("Lazaret is already up (supervisor pid ", buf, ")"));
    }
    return ErrnoStatus(absl::StrCat("locking ", path), e);
  }
  std::string pid = absl::StrCat(getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus(absl::StrCat("writing ", path), e);
  }
  return std::unique_ptr<LockFile>(new LockFile(fd));
}

LockFile::~LockFile() { close(fd_); }

}  // namespace lazaret::supervisor
