#include "helper/mount/overlay_paths.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/path.h"
#include "services/common/status_util.h"

namespace lazaret::mounthelper {
namespace {

// Opens (creating when asked) the directory `name` below `parent` without
// following a symlink, and checks its owner.
absl::StatusOr<fs::DirFd> OpenOwnedChild(const fs::DirFd& parent, const std::string& where,
                                         const std::string& name, uid_t owner, bool create) {
  const std::string path = absl::StrCat(where, "/", name);
  if (create && mkdirat(parent.get(), name.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("create ", path), errno);
  }
  const int fd =
      openat(parent.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      return absl::FailedPreconditionError(
          absl::StrCat(path,
                       " is not a real directory (a symlink or a file); Lazaret never "
                       "follows one in profile state. Remove it"));
    }
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    }
    return ErrnoStatus(absl::StrCat("open ", path), err);
  }
  fs::DirFd dir = fs::DirFd::Adopt(fd);
  struct stat st {};
  if (fstat(dir.get(), &st) != 0) return ErrnoStatus(absl::StrCat("stat ", path), errno);
  if (st.st_uid != owner) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " belongs to uid ", st.st_uid, ", not to uid ", owner,
        " (the mount helper's user); profile state must be the user's own. Fix its owner"));
  }
  return dir;
}

}  // namespace

absl::StatusOr<CheckedOverlay> CheckOverlay(const std::string& data_root,
                                            const std::string& profile_dir,
                                            const std::string& directory, uid_t owner,
                                            bool create) {
  LAZ_RETURN_IF_ERROR(CheckPersistentDir(directory));
  if (directory.size() > 1024) {
    return absl::InvalidArgumentError("persistent directory name longer than 1024 bytes");
  }
  if (!fs::IsCleanAbsolutePath(data_root) || !fs::IsCleanAbsolutePath(profile_dir) ||
      fs::Dirname(profile_dir) != data_root) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile directory ", profile_dir, " is not one directory below data_root ", data_root));
  }
  const std::string name = fs::Basename(profile_dir);
  LAZ_RETURN_IF_ERROR(fs::CheckOneComponent(name));
  CheckedOverlay c;
  c.directory = directory;
  c.profile_dir = profile_dir;
  c.paths = PersistPathsFor(profile_dir, directory);
  // data_root is the user's own setting: made like mkdir -p on a first
  // run (a symlinked ~/.local stays usable), opened as it is otherwise.
  LAZ_ASSIGN_OR_RETURN(fs::DirFd root, create ? fs::MakeDirs(data_root, 0700)
                                              : fs::DirFd::OpenTrusted(data_root));
  LAZ_ASSIGN_OR_RETURN(c.profile, OpenOwnedChild(root, data_root, name, owner, create));
  const std::string base = PersistName(directory);
  if (base.size() + 8 > 255) {
    return absl::InvalidArgumentError(
        absl::StrCat("persistent directory '", directory, "' escapes to a file name too long"));
  }
  LAZ_ASSIGN_OR_RETURN(c.changes, OpenOwnedChild(c.profile, profile_dir,
                                                 absl::StrCat(base, "_changes"), owner, create));
  LAZ_ASSIGN_OR_RETURN(
      c.work, OpenOwnedChild(c.profile, profile_dir, absl::StrCat(base, "_work"), owner, create));
  LAZ_ASSIGN_OR_RETURN(c.merged, OpenOwnedChild(c.profile, profile_dir,
                                                absl::StrCat(base, "_merged"), owner, create));
  return c;
}

absl::StatusOr<fs::DirFd> OpenLowerDir(int root_fd, const std::string& rel,
                                       const std::string& image_id) {
  if (!fs::IsCleanAbsolutePath(rel) || rel == "/") {
    return absl::InvalidArgumentError(absl::StrCat("'", rel, "' is not a directory to persist"));
  }
  fs::OpenedBeneath opened =
      fs::OpenBeneath(root_fd, rel.substr(1), O_RDONLY | O_DIRECTORY,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (!opened.fd.valid()) {
    const int err = opened.error;
    if (err == ENOENT || err == ELOOP || err == ENOTDIR || err == EXDEV) {
      return absl::FailedPreconditionError(absl::StrCat(
          "image ", image_id.substr(0, 12), " has no directory ", rel,
          " (missing, or a symlink there); a persistent directory must be a real directory of "
          "the sandbox image. Remove it from persistent_dirs or use an image that has it"));
    }
    return ErrnoStatus(absl::StrCat("open ", rel, " in image ", image_id.substr(0, 12)), err);
  }
  return fs::DirFd::Adopt(opened.fd.release());
}

}  // namespace lazaret::mounthelper
