#include "helper/mount/overlay_paths.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "helper/mount/layer_stats.h"
#include "helper/mount/thread_caps.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::mounthelper {
namespace {

constexpr size_t kMaxRootRecord = 128;

std::string RootRecordName(const std::string& base) { return absl::StrCat(base, "_root"); }

// Opens (creating when asked) the directory `name` below `parent` without
// following a symlink, and checks its owner unless `owner` is nullopt.
absl::StatusOr<fs::DirFd> OpenChild(const fs::DirFd& parent, const std::string& where,
                                    const std::string& name, std::optional<uid_t> owner,
                                    bool create) {
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
  if (owner && st.st_uid != *owner) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " belongs to uid ", st.st_uid, ", not to uid ", *owner,
        " (the mount helper's user); profile state must be the user's own. Fix its owner"));
  }
  return dir;
}

// What the helper last gave the upper layer's root: mode (permission
// bits), owner, group and mtime. Kept so that a later mount can tell
// whether the sandbox changed them since.
struct RootRecord {
  uint32_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int64_t mtime_sec = 0;
  int64_t mtime_nsec = 0;
};

absl::StatusOr<std::optional<RootRecord>> ReadRootRecord(const fs::DirFd& profile,
                                                         const std::string& name) {
  const int fd = openat(profile.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    return ErrnoStatus(absl::StrCat("opening the root record ", name), errno);
  }
  fs::UniqueFd file(fd);
  struct stat st {};
  if (fstat(file.get(), &st) != 0) return ErrnoStatus(absl::StrCat("stat ", name), errno);
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the root record ", name, " is not a regular file of the mount helper's user; remove it"));
  }
  char buf[kMaxRootRecord];
  const ssize_t n = read(file.get(), buf, sizeof(buf));
  if (n < 0) return ErrnoStatus(absl::StrCat("reading ", name), errno);
  std::vector<absl::string_view> f = absl::StrSplit(
      absl::string_view(buf, static_cast<size_t>(n)), absl::ByAnyChar(" \n"), absl::SkipEmpty());
  RootRecord r;
  if (f.size() != 5 || !absl::SimpleAtoi(f[0], &r.mode) || !absl::SimpleAtoi(f[1], &r.uid) ||
      !absl::SimpleAtoi(f[2], &r.gid) || !absl::SimpleAtoi(f[3], &r.mtime_sec) ||
      !absl::SimpleAtoi(f[4], &r.mtime_nsec)) {
    // Not the helper's writing: treated as absent, so the image's
    // attributes are given again.
    return std::nullopt;
  }
  return r;
}

absl::Status WriteRootRecord(const fs::DirFd& profile, const std::string& name,
                             const struct stat& st) {
  const std::string text = absl::StrCat(st.st_mode & 07777, " ", st.st_uid, " ", st.st_gid, " ",
                                        st.st_mtim.tv_sec, " ", st.st_mtim.tv_nsec, "\n");
  absl::Status s = fs::WriteFileAtomicAt(profile, name, text, 0600, fs::Durability::kSync);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("writing the root record ", name, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MatchRootToLower(const fs::DirFd& lower, const CheckedOverlay& o) {
  const std::string name = RootRecordName(PersistName(o.directory));
  LAZ_ASSIGN_OR_RETURN(std::optional<RootRecord> rec, ReadRootRecord(o.profile, name));
  struct stat image {};
  struct stat upper {};
  if (fstat(lower.get(), &image) != 0) {
    return ErrnoStatus(absl::StrCat("stat ", o.directory, " of the image"), errno);
  }
  if (fstat(o.changes.get(), &upper) != 0) {
    return ErrnoStatus(absl::StrCat("stat ", o.paths.changes), errno);
  }
  const bool same_owner_mode = rec && rec->mode == (upper.st_mode & 07777) &&
                               rec->uid == upper.st_uid && rec->gid == upper.st_gid;
  const bool same_mtime = rec && rec->mtime_sec == upper.st_mtim.tv_sec &&
                          rec->mtime_nsec == upper.st_mtim.tv_nsec;
  {
    // Another owner than the helper's user, and that owner's mode and
    // times: CHOWN and FOWNER, for these three calls on the layer's root.
    ThreadCapsInEffect caps({CAP_CHOWN, CAP_FOWNER});
    if (!rec || same_owner_mode) {
      // Owner first: a chown may clear setgid bits the mode then restores.
      if (fchown(o.changes.get(), image.st_uid, image.st_gid) != 0 ||
          fchmod(o.changes.get(), image.st_mode & 07777) != 0) {
        return ErrnoStatus(
            absl::StrCat("giving ", o.paths.changes, " the owner and mode of the image's ",
                         o.directory),
            errno);
      }
    }
    if (!rec || same_mtime) {
      const struct timespec times[2] = {image.st_atim, image.st_mtim};
      if (futimens(o.changes.get(), times) != 0) {
        return ErrnoStatus(
            absl::StrCat("giving ", o.paths.changes, " the times of the image's ", o.directory),
            errno);
      }
    }
  }
  if (fstat(o.changes.get(), &upper) != 0) {
    return ErrnoStatus(absl::StrCat("stat ", o.paths.changes), errno);
  }
  return WriteRootRecord(o.profile, name, upper);
}

absl::Status RemoveRootRecord(const fs::DirFd& profile, const std::string& base) {
  const std::string name = RootRecordName(base);
  if (unlinkat(profile.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("removing the root record ", name), errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckedProfile> CheckProfile(const std::string& data_root,
                                            const std::string& profile_dir, uid_t owner,
                                            bool create) {
  if (!vocab::IsCleanAbsolutePath(data_root) || !vocab::IsCleanAbsolutePath(profile_dir) ||
      vocab::Dirname(profile_dir) != data_root) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile directory ", profile_dir, " is not one directory below data_root ", data_root));
  }
  const std::string name = vocab::Basename(profile_dir);
  LAZ_RETURN_IF_ERROR(vocab::CheckOneComponent(name));
  CheckedProfile c;
  c.profile_dir = profile_dir;
  // data_root is the user's own setting: made like mkdir -p on a first
  // run (a symlinked ~/.local stays usable), opened as it is otherwise.
  LAZ_ASSIGN_OR_RETURN(fs::DirFd root, create ? fs::MakeDirs(data_root, 0700)
                                              : fs::DirFd::OpenTrusted(data_root));
  LAZ_ASSIGN_OR_RETURN(c.profile, OpenChild(root, data_root, name, owner, create));
  return c;
}

absl::StatusOr<fs::DirFd> OpenPersistDir(const CheckedProfile& profile, uid_t owner, bool create) {
  return OpenChild(profile.profile, profile.profile_dir, kPersistMountName, owner, create);
}

absl::StatusOr<CheckedOverlay> CheckOverlay(const std::string& data_root,
                                            const std::string& profile_dir,
                                            const std::string& directory, uid_t owner,
                                            bool create) {
  LAZ_RETURN_IF_ERROR(CheckPersistentDir(directory));
  if (directory.size() > 1024) {
    return absl::InvalidArgumentError("persistent directory name longer than 1024 bytes");
  }
  LAZ_ASSIGN_OR_RETURN(CheckedProfile p, CheckProfile(data_root, profile_dir, owner, create));
  CheckedOverlay c;
  c.directory = directory;
  c.profile_dir = profile_dir;
  c.paths = PersistPathsFor(profile_dir, directory);
  c.profile = std::move(p.profile);
  const std::string base = PersistName(directory);
  if (base.size() + 8 > 255) {
    return absl::InvalidArgumentError(
        absl::StrCat("persistent directory '", directory, "' escapes to a file name too long"));
  }
  const std::string persist_path = PersistMountPath(profile_dir);
  LAZ_ASSIGN_OR_RETURN(c.persist,
                       OpenChild(c.profile, profile_dir, kPersistMountName, owner, create));
  {
    // The upper layer's root is D's root as the sandbox sees it: its owner
    // and mode are the image's (MatchRootToLower) or whatever the sandbox
    // made them - 0000 or another uid's included - so it is opened with
    // DAC_OVERRIDE and its owner is not checked. What keeps others out is
    // the 0700 profile directory above it, checked above.
    ThreadCapsInEffect caps({CAP_DAC_OVERRIDE});
    LAZ_ASSIGN_OR_RETURN(c.changes, OpenChild(c.persist, persist_path,
                                              absl::StrCat(base, "_changes"), std::nullopt, create));
  }
  LAZ_ASSIGN_OR_RETURN(
      c.work, OpenChild(c.persist, persist_path, absl::StrCat(base, "_work"), owner, create));
  LAZ_ASSIGN_OR_RETURN(c.merged, OpenChild(c.profile, profile_dir,
                                           absl::StrCat(base, "_merged"), owner, create));
  return c;
}

bool HasUncappedLayer(const CheckedProfile& profile, const std::string& directory) {
  struct stat st {};
  const std::string name = absl::StrCat(PersistName(directory), "_changes");
  return fstatat(profile.profile.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

absl::Status RemoveUncappedLayers(const CheckedProfile& profile, const std::string& directory) {
  for (const char* suffix : {"_changes", "_work"}) {
    const std::string name = absl::StrCat(PersistName(directory), suffix);
    struct stat st {};
    if (fstatat(profile.profile.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      absl::StatusOr<fs::DirFd> dir;
      {
        // Its root may carry any owner and mode the sandbox gave it.
        ThreadCapsInEffect caps({CAP_DAC_OVERRIDE});
        dir = OpenChild(profile.profile, profile.profile_dir, name, std::nullopt, false);
      }
      if (!dir.ok()) return dir.status();
      LAZ_RETURN_IF_ERROR(RemoveLayerContents(*dir));
    }
    ThreadCapsInEffect caps({CAP_DAC_OVERRIDE, CAP_FOWNER});
    if (unlinkat(profile.profile.get(), name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) !=
            0 &&
        errno != ENOENT) {
      return ErrnoStatus(absl::StrCat("removing ", profile.profile_dir, "/", name), errno);
    }
  }
  return absl::OkStatus();
}

absl::Status WriteImageRecord(const fs::DirFd& profile, const std::string& base,
                              const std::string& image_id) {
  const std::string name = absl::StrCat(base, "_image");
  absl::Status s = fs::WriteFileAtomicAt(profile, name, absl::StrCat(image_id, "\n"), 0600,
                                         fs::Durability::kSync);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("writing the image record ", name, ": ", s.message()));
  }
  return absl::OkStatus();
}

std::string ReadImageRecord(const fs::DirFd& profile, const std::string& base) {
  const std::string name = absl::StrCat(base, "_image");
  const int fd = openat(profile.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  fs::UniqueFd file(fd);
  char buf[80];
  const ssize_t n = read(file.get(), buf, sizeof(buf));
  if (n < 64) return "";
  std::string id(buf, 64);
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  }
  return id;
}

absl::Status RemoveImageRecord(const fs::DirFd& profile, const std::string& base) {
  const std::string name = absl::StrCat(base, "_image");
  if (unlinkat(profile.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("removing the image record ", name), errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<fs::DirFd> OpenLowerDir(int root_fd, const std::string& rel,
                                       const std::string& image_id) {
  if (!vocab::IsCleanAbsolutePath(rel) || rel == "/") {
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
