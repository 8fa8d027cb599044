#include "services/common/fs/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::fs {
namespace {

// Splits a trusted absolute path into its directory and last component.
absl::Status SplitPath(const std::string& path, std::string* dir, std::string* name) {
  const size_t slash = path.rfind('/');
  if (!vocab::IsCleanAbsolutePath(path) || slash == std::string::npos || slash + 1 == path.size()) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a clean absolute path"));
  }
  *dir = slash == 0 ? "/" : path.substr(0, slash);
  *name = path.substr(slash + 1);
  return absl::OkStatus();
}

// Creates or replaces `name` in `dir` through a temporary file next to it:
// created O_EXCL|O_NOFOLLOW with `mode`, filled by `fill(fd)`, given
// `mode` exactly, synced if asked and renamed over `name`. The temporary
// file is removed on any failure.
template <typename Fill>
absl::Status ReplaceFileAt(const DirFd& dir, const std::string& name, mode_t mode,
                           Durability durability, Fill fill) {
  LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(name));
  const std::string tmp = TemporaryNameFor(name);
  unlinkat(dir.get(), tmp.c_str(), 0);
  UniqueFd fd(
      openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("creating ", tmp), errno);
  absl::Status s = fill(fd.get());
  if (s.ok() &&
      (fchmod(fd.get(), mode) != 0 || (durability == Durability::kSync && fsync(fd.get()) != 0) ||
       renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0)) {
    s = ErrnoStatus(absl::StrCat("writing ", name), errno);
  }
  if (!s.ok()) unlinkat(dir.get(), tmp.c_str(), 0);
  return s;
}

}  // namespace

const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "symlink";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "special file";
}

absl::Status WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("writing", errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadAll(int fd, uint64_t max_bytes, const std::string& what) {
  std::string out;
  char buf[1 << 14];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("reading ", what), errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(what, " is larger than ", max_bytes));
    }
  }
  return out;
}

absl::StatusOr<UniqueFd> OpenRegularFileAt(const DirFd& dir, const std::string& name,
                                           struct stat* st) {
  LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(name));
  UniqueFd path_fd(openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!path_fd.valid()) return ErrnoStatus(absl::StrCat("opening ", name), errno);
  struct stat local {};
  struct stat* s = st != nullptr ? st : &local;
  if (fstat(path_fd.get(), s) != 0) return ErrnoStatus(absl::StrCat("inspecting ", name), errno);
  if (!S_ISREG(s->st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, " is a ", FileTypeName(s->st_mode), ", not a regular file"));
  }
  // The magic link refers to the inode just checked, whatever the name
  // points to now.
  const std::string proc = absl::StrCat("/proc/self/fd/", path_fd.get());
  UniqueFd fd(open(proc.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid() && errno == EACCES) {
    AddOwnerPermissions(path_fd.get(), S_IRUSR);
    fd.reset(open(proc.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  }
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("opening ", name, " for reading"), errno);
  return fd;
}

absl::StatusOr<std::string> ReadRegularFileAt(const DirFd& dir, const std::string& name,
                                              uint64_t max_bytes) {
  struct stat st {};
  LAZ_ASSIGN_OR_RETURN(UniqueFd fd, OpenRegularFileAt(dir, name, &st));
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(name, " is larger than ", max_bytes));
  }
  return ReadAll(fd.get(), max_bytes, name);
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes) {
  std::string dir_path, name;
  LAZ_RETURN_IF_ERROR(SplitPath(path, &dir_path, &name));
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::OpenTrusted(dir_path));
  return ReadRegularFileAt(dir, name, max_bytes);
}

absl::StatusOr<std::string> ReadHostFile(const std::string& path, uint64_t max_bytes) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("opening ", path), errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("inspecting ", path), errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is a ", FileTypeName(st.st_mode), ", not a regular file"));
  }
  return ReadAll(fd.get(), max_bytes, path);
}

std::string TemporaryNameFor(const std::string& name) {
  return absl::StrCat(".lazaret-tmp-", getpid(), "-", name);
}

absl::Status WriteFileAtomicAt(const DirFd& dir, const std::string& name,
                               absl::string_view contents, mode_t mode, Durability durability) {
  return ReplaceFileAt(dir, name, mode, durability,
                       [contents](int fd) { return WriteAll(fd, contents); });
}

absl::StatusOr<uint64_t> CopyRegularFileAt(const DirFd& src, const std::string& name,
                                           const DirFd& dst, const std::string& dst_name,
                                           uint64_t max_bytes, mode_t mode) {
  struct stat st {};
  LAZ_ASSIGN_OR_RETURN(UniqueFd in, OpenRegularFileAt(src, name, &st));
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name, " is ", st.st_size, " bytes, over the limit of ", max_bytes));
  }
  uint64_t total = 0;
  LAZ_RETURN_IF_ERROR(
      ReplaceFileAt(dst, dst_name, mode, Durability::kNoSync, [&](int out) -> absl::Status {
        char buf[1 << 16];
        for (;;) {
          const ssize_t n = read(in.get(), buf, sizeof(buf));
          if (n < 0) {
            if (errno == EINTR) continue;
            return ErrnoStatus(absl::StrCat("reading ", name), errno);
          }
          if (n == 0) return absl::OkStatus();
          total += static_cast<uint64_t>(n);
          if (total > max_bytes) {
            return absl::ResourceExhaustedError(
                absl::StrCat(name, " grew over the limit while copied"));
          }
          LAZ_RETURN_IF_ERROR(WriteAll(out, absl::string_view(buf, static_cast<size_t>(n))));
        }
      }));
  return total;
}

absl::Status WriteNewFileAt(const DirFd& dir, const std::string& name, absl::string_view contents,
                            mode_t mode) {
  LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(name));
  UniqueFd fd(
      openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("creating ", name), errno);
  if (fchmod(fd.get(), mode) != 0) return ErrnoStatus(absl::StrCat("chmod ", name), errno);
  LAZ_RETURN_IF_ERROR(WriteAll(fd.get(), contents));
  if (close(fd.release()) != 0) return ErrnoStatus(absl::StrCat("closing ", name), errno);
  return absl::OkStatus();
}

absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents, mode_t mode,
                             Durability durability) {
  std::string dir_path, name;
  LAZ_RETURN_IF_ERROR(SplitPath(path, &dir_path, &name));
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::OpenTrusted(dir_path));
  return WriteFileAtomicAt(dir, name, contents, mode, durability);
}

std::optional<std::string> RegularFileFingerprint(const DirFd& dir, const std::string& name) {
  struct stat st {};
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  return absl::StrCat(st.st_size, " ", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, " ",
                      st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec, " ", st.st_ino);
}

absl::StatusOr<std::string> ReadLinkAt(int dirfd, const std::string& name,
                                       const std::string& what) {
  char buf[PATH_MAX + 1];
  const ssize_t n = readlinkat(dirfd, name.c_str(), buf, sizeof(buf));
  if (n < 0) return ErrnoStatus(absl::StrCat("reading the symlink ", what), errno);
  if (static_cast<size_t>(n) > PATH_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("the symlink ", what, " has a target over ", PATH_MAX, " bytes"));
  }
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace lazaret::fs
