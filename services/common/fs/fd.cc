#include "services/common/fs/fd.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::fs {

OpenedBeneath OpenBeneath(int dir_fd, const std::string& path, uint64_t flags, uint64_t resolve) {
  struct open_how how {};
  how.flags = flags | O_CLOEXEC;
  how.resolve = resolve;
  const long fd = syscall(SYS_openat2, dir_fd, path.empty() ? "." : path.c_str(), &how, sizeof how);
  OpenedBeneath opened;
  if (fd < 0) {
    opened.error = errno;
  } else {
    opened.fd.reset(static_cast<int>(fd));
  }
  return opened;
}
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() { return std::exchange(fd_, -1); }

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

void AddOwnerPermissions(int fd, unsigned bits) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || S_ISLNK(st.st_mode)) return;
  if ((st.st_mode & bits) == bits) return;
  chmod(absl::StrCat("/proc/self/fd/", fd).c_str(), (st.st_mode & 07777) | bits);
}

absl::StatusOr<DirFd> DirFd::Open(const std::string& path) {
  const int fd = open(path.c_str(), kDirFlags);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening directory ", path), errno);
  return DirFd(fd);
}

absl::StatusOr<DirFd> DirFd::OpenTrusted(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening directory ", path), errno);
  return DirFd(fd);
}

absl::StatusOr<DirFd> DirFd::OpenChild(const std::string& name) const {
  LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(name));
  const int fd = openat(get(), name.c_str(), kDirFlags);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening directory ", name), errno);
  return DirFd(fd);
}

absl::StatusOr<DirFd> DirFd::OpenOwnChild(const std::string& name) const {
  LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(name));
  int fd = openat(get(), name.c_str(), kDirFlags);
  if (fd < 0 && errno == EACCES) {
    const int path_fd = openat(get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (path_fd >= 0) {
      AddOwnerPermissions(path_fd, S_IRWXU);
      close(path_fd);
      fd = openat(get(), name.c_str(), kDirFlags);
    } else {
      errno = EACCES;
    }
  }
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening directory ", name), errno);
  // Entries below must be removable too (a 0555 directory would refuse).
  AddOwnerPermissions(fd, S_IRWXU);
  return DirFd(fd);
}

}  // namespace lazaret::fs
