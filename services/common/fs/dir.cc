#include "services/common/fs/dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::fs {
namespace {

// Deeper than any tree Lazaret makes; a sandbox-made tree deeper than this
// is refused rather than recursed into without bound.
constexpr int kMaxRemoveDepth = 2048;

absl::Status RemoveTreeAtDepth(const DirFd& dir, const std::string& name, int depth);

absl::Status RemoveContentsAtDepth(const DirFd& dir, const std::string& where, int depth) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(dir));
  absl::Status status;
  for (const auto& n : names) status.Update(RemoveTreeAtDepth(dir, n, depth + 1));
  if (!status.ok() && !where.empty()) {
    return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));
  }
  return status;
}

absl::Status RemoveTreeAtDepth(const DirFd& dir, const std::string& name, int depth) {
  if (depth > kMaxRemoveDepth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("directory tree below '", name, "' is too deep to remove"));
  }
  if (unlinkat(dir.get(), name.c_str(), 0) == 0 || errno == ENOENT) return absl::OkStatus();
  if (errno != EISDIR && errno != EPERM) return ErrnoStatus(absl::StrCat("removing ", name), errno);
  absl::StatusOr<DirFd> child = dir.OpenOwnChild(name);
  if (!child.ok()) {
    // Swapped for a non-directory since unlinkat looked: try once more.
    if (unlinkat(dir.get(), name.c_str(), 0) == 0 || errno == ENOENT) return absl::OkStatus();
    return child.status();
  }
  LAZ_RETURN_IF_ERROR(RemoveContentsAtDepth(*child, "", depth));
  if (unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("removing directory ", name), errno);
  }
  return absl::OkStatus();
}

// How MakeComponents opens each component once it exists.
enum class OpenAs {
  kNoFollow,  // O_NOFOLLOW: a symlink is an error
  kFollow,    // as any lookup does (mkdir -p of a configured path)
  kOwnChild,  // DirFd::OpenOwnChild
};

absl::StatusOr<DirFd> MakeComponents(const DirFd& base, const std::vector<std::string>& parts,
                                     mode_t mode, OpenAs open_as) {
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  if (open_as != OpenAs::kFollow) flags |= O_NOFOLLOW;
  DirFd dir;
  const DirFd* at = &base;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(part));
    if (mkdirat(at->get(), part.c_str(), mode) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating directory ", part), errno);
    }
    if (open_as == OpenAs::kOwnChild) {
      LAZ_ASSIGN_OR_RETURN(dir, at->OpenOwnChild(part));
    } else {
      const int fd = openat(at->get(), part.c_str(), flags);
      if (fd < 0) return ErrnoStatus(absl::StrCat("opening directory ", part), errno);
      dir = DirFd::Adopt(fd);
    }
    at = &dir;
  }
  if (parts.empty()) {
    const int fd = openat(base.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("reopening a directory", errno);
    return DirFd::Adopt(fd);
  }
  return dir;
}

// MakeComponents of `rel` split at '/' (empty parts skipped), naming `rel`
// in an error.
absl::StatusOr<DirFd> MakePath(const DirFd& base, const std::string& rel, mode_t mode,
                               OpenAs open_as) {
  const std::vector<std::string> parts = absl::StrSplit(rel, '/', absl::SkipEmpty());
  absl::StatusOr<DirFd> dir = MakeComponents(base, parts, mode, open_as);
  if (!dir.ok()) {
    return absl::Status(dir.status().code(),
                        absl::StrCat("making ", rel, ": ", dir.status().message()));
  }
  return dir;
}

}  // namespace

absl::StatusOr<DirFd> MakeDirsAt(const DirFd& base, const std::string& rel, mode_t mode) {
  return MakePath(base, rel, mode, OpenAs::kNoFollow);
}

absl::StatusOr<DirFd> MakeOwnDirsAt(const DirFd& base, const std::string& rel, mode_t mode) {
  return MakePath(base, rel, mode, OpenAs::kOwnChild);
}

absl::StatusOr<DirFd> MakeDirs(const std::string& path, mode_t mode) {
  if (!vocab::IsCleanAbsolutePath(path)) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a clean absolute path"));
  }
  LAZ_ASSIGN_OR_RETURN(DirFd root, DirFd::Open("/"));
  return MakePath(root, path, mode, OpenAs::kFollow);
}

absl::StatusOr<std::vector<std::string>> ListNames(const DirFd& dir) {
  const int fd = openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("opening directory for listing", errno);
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    close(fd);
    return ErrnoStatus("listing directory", err);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
    errno = 0;
  }
  const int err = errno;
  closedir(d);
  if (err != 0) return ErrnoStatus("listing directory", err);
  return names;
}

absl::Status RemoveTreeAt(const DirFd& dir, const std::string& name) {
  LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(name));
  return RemoveTreeAtDepth(dir, name, 0);
}

absl::Status RemoveContents(const DirFd& dir) { return RemoveContentsAtDepth(dir, "", 0); }

absl::Status RemoveTree(const std::string& path) {
  if (!vocab::IsCleanAbsolutePath(path) || path == "/") {
    return absl::InvalidArgumentError(absl::StrCat("refusing to remove '", path, "'"));
  }
  const size_t slash = path.rfind('/');
  LAZ_ASSIGN_OR_RETURN(DirFd parent, DirFd::Open(slash == 0 ? "/" : path.substr(0, slash)));
  return RemoveTreeAt(parent, path.substr(slash + 1));
}

}  // namespace lazaret::fs
