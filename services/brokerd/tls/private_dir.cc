#include "services/brokerd/tls/private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/fs/path.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd::tls {
namespace {

std::string Mode(mode_t mode) { return absl::StrFormat("%04o", mode & 07777); }

// Owner and permission checks on an opened directory.
absl::Status CheckOwnedPrivate(const struct stat& st, const std::string& path, const char* what) {
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " ", path, " is a ", fs::FileTypeName(st.st_mode), ", not a directory; remove it"));
  }
  if (st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, " is owned by uid ", st.st_uid, ", not by the broker's uid ",
                     geteuid(), "; remove it or chown ", geteuid(), " it"));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, " has mode ", Mode(st.st_mode), "; chmod 0700 ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<fs::DirFd> OpenNoFollow(int at, const std::string& name, const std::string& path,
                                       const char* what, const struct stat& seen) {
  const int fd = openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", what, " ", path), errno);
  fs::DirFd dir = fs::DirFd::Adopt(fd);
  struct stat st {};
  if (fstat(dir.get(), &st) != 0) return ErrnoStatus(absl::StrCat("stat ", path), errno);
  if (st.st_dev != seen.st_dev || st.st_ino != seen.st_ino) {
    return absl::AbortedError(absl::StrCat(what, " ", path, " was replaced while opened"));
  }
  LAZ_RETURN_IF_ERROR(CheckOwnedPrivate(st, path, what));
  return dir;
}

}  // namespace

std::string DefaultCertsRoot() { return absl::StrCat("/dev/shm/lazaret-", geteuid()); }

absl::StatusOr<fs::DirFd> OpenPrivateRoot(const std::string& path, const char* what,
                                          Backing backing) {
  if (!fs::IsCleanAbsolutePath(path) || path == "/") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a clean absolute path, not '", path, "'"));
  }
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(
        absl::StrCat("creating ", what, " ", path, " (only its last component is created)"), errno);
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return ErrnoStatus(absl::StrCat("lstat ", path), errno);
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " ", path, " is a symlink; point the configuration at a real directory"));
  }
  LAZ_RETURN_IF_ERROR(CheckOwnedPrivate(st, path, what));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, OpenNoFollow(AT_FDCWD, path, path, what, st));
  if (backing == Backing::kMemory) {
    struct statfs sfs {};
    if (fstatfs(dir.get(), &sfs) != 0) return ErrnoStatus(absl::StrCat("statfs ", path), errno);
    if (sfs.f_type != TMPFS_MAGIC && sfs.f_type != RAMFS_MAGIC) {
      return absl::FailedPreconditionError(
          absl::StrCat("certificates must live on a memory filesystem (tmpfs or ramfs): ", path,
                       " is not on one; use a directory under /dev/shm"));
    }
  }
  return dir;
}

absl::StatusOr<fs::DirFd> CreateSessionDir(const fs::DirFd& root, const std::string& root_path,
                                           const std::string& name, bool adopt_existing) {
  LAZ_RETURN_IF_ERROR(fs::CheckOneComponent(name));
  const std::string path = absl::StrCat(root_path, "/", name);
  const char* what = "session directory";
  if (mkdirat(root.get(), name.c_str(), 0700) == 0) {
    struct stat st {};
    if (fstatat(root.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoStatus(absl::StrCat("stat ", path), errno);
    }
    LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, OpenNoFollow(root.get(), name, path, what, st));
    if (fchmod(dir.get(), 0700) != 0) return ErrnoStatus(absl::StrCat("chmod ", path), errno);
    return dir;
  }
  if (errno != EEXIST) return ErrnoStatus(absl::StrCat("creating ", path), errno);
  if (!adopt_existing) {
    return absl::AlreadyExistsError(
        absl::StrCat("a file, directory or symlink already exists at ", path, "; remove it"));
  }
  struct stat st {};
  if (fstatat(root.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoStatus(absl::StrCat("stat ", path), errno);
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(what, " ", path, " is a symlink; remove it"));
  }
  LAZ_RETURN_IF_ERROR(CheckOwnedPrivate(st, path, what));
  if ((st.st_mode & 07777) != 0700) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, " has mode ", Mode(st.st_mode), ", not 0700; remove it"));
  }
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, OpenNoFollow(root.get(), name, path, what, st));
  LAZ_RETURN_IF_ERROR(fs::RemoveContents(dir));
  return dir;
}

}  // namespace lazaret::brokerd::tls
