#include "services/brokerd/tls/private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

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

absl::Status CheckMemoryBacked(const fs::DirFd& dir, const std::string& path) {
  struct statfs sfs {};
  if (fstatfs(dir.get(), &sfs) != 0) return ErrnoStatus(absl::StrCat("statfs ", path), errno);
  if (sfs.f_type != TMPFS_MAGIC && sfs.f_type != RAMFS_MAGIC) {
    return absl::FailedPreconditionError(
        absl::StrCat("certificates must live on a memory filesystem (tmpfs or ramfs): ", path,
                     " is not on one; use a directory under /dev/shm"));
  }
  return absl::OkStatus();
}

// `name` in `parent`: a 0700 directory of ours on a memory filesystem,
// opened without following, flock'ed (not held by another broker) and
// still the one `parent` names once locked.
absl::StatusOr<fs::DirFd> OpenAndLockRoot(const fs::DirFd& parent, const std::string& name,
                                          const std::string& path) {
  struct stat st {};
  if (fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoStatus(absl::StrCat("stat ", path), errno);
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is a symlink"));
  }
  LAZ_RETURN_IF_ERROR(CheckOwnedPrivate(st, path, "certificate root"));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir,
                       OpenNoFollow(parent.get(), name, path, "certificate root", st));
  LAZ_RETURN_IF_ERROR(CheckMemoryBacked(dir, path));
  if (flock(dir.get(), LOCK_EX | LOCK_NB) != 0) {
    return absl::UnavailableError(absl::StrCat(path, " is held by another lazaret-brokerd"));
  }
  struct stat again {};
  if (fstatat(parent.get(), name.c_str(), &again, AT_SYMLINK_NOFOLLOW) != 0 ||
      again.st_dev != st.st_dev || again.st_ino != st.st_ino) {
    return absl::AbortedError(absl::StrCat(path, " was removed or replaced while claimed"));
  }
  return dir;
}

bool IsRootName(const std::string& name, const std::string& prefix) {
  if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    const char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<CertsRoot> CertsRoot::Claim(const std::string& parent,
                                           const std::string& runtime_dir) {
  if (!vocab::IsCleanAbsolutePath(parent) || !vocab::IsCleanAbsolutePath(runtime_dir)) {
    return absl::InvalidArgumentError(
        "the certificate root's parent and the runtime directory "
        "must be clean absolute paths");
  }
  LAZ_ASSIGN_OR_RETURN(fs::DirFd parent_fd, fs::DirFd::Open(parent));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd runtime_fd, fs::DirFd::Open(runtime_dir));
  const std::string prefix = absl::StrCat("lazaret-", geteuid(), ".");
  std::string name;
  fs::DirFd dir;
  // The root a previous broker recorded, when it is still a good one.
  if (absl::StatusOr<std::string> recorded =
          fs::ReadRegularFileAt(runtime_fd, kCertsRootRecord, 4096);
      recorded.ok() && absl::StartsWith(*recorded, parent + "/") &&
      IsRootName(recorded->substr(parent.size() + 1), prefix)) {
    const std::string candidate = recorded->substr(parent.size() + 1);
    if (absl::StatusOr<fs::DirFd> taken = OpenAndLockRoot(parent_fd, candidate, *recorded);
        taken.ok()) {
      name = candidate;
      dir = *std::move(taken);
    }
  }
  if (name.empty()) {
    std::string templ = absl::StrCat(parent, "/", prefix, "XXXXXX");
    if (mkdtemp(templ.data()) == nullptr) {
      return ErrnoStatus(absl::StrCat("creating the certificate root ", templ), errno);
    }
    name = templ.substr(parent.size() + 1);
    LAZ_ASSIGN_OR_RETURN(dir, OpenAndLockRoot(parent_fd, name, templ));
    LAZ_RETURN_IF_ERROR(
        fs::WriteFileAtomicAt(runtime_fd, kCertsRootRecord, templ, 0600, fs::Durability::kNoSync));
  }
  // Stale roots of ours: left by a broker that is gone (their flock is
  // free). Others' entries are not touched.
  if (absl::StatusOr<std::vector<std::string>> names = fs::ListNames(parent_fd); names.ok()) {
    for (const std::string& other : *names) {
      if (other == name || !IsRootName(other, prefix)) continue;
      absl::StatusOr<fs::DirFd> stale =
          OpenAndLockRoot(parent_fd, other, absl::StrCat(parent, "/", other));
      if (!stale.ok()) continue;
      (void)fs::RemoveTreeAt(parent_fd, other);
    }
  }
  return CertsRoot(absl::StrCat(parent, "/", name), std::move(dir));
}

absl::StatusOr<fs::DirFd> OpenPrivateRoot(const std::string& path, const char* what,
                                          Backing backing) {
  if (!vocab::IsCleanAbsolutePath(path) || path == "/") {
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
  if (backing == Backing::kMemory) LAZ_RETURN_IF_ERROR(CheckMemoryBacked(dir, path));
  return dir;
}

absl::StatusOr<fs::DirFd> CreateSessionDir(const fs::DirFd& root, const std::string& root_path,
                                           const std::string& name, bool adopt_existing) {
  LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(name));
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
