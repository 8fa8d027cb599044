#include "clients/lazaret/gitshadow/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/gitshadow/classify.h"
#include "services/common/status_util.h"

namespace lazaret::cli::gitshadow {
namespace {

constexpr int kMaxRemoveDepth = 2048;

const char* TypeName(mode_t mode) {
  if (S_ISLNK(mode)) return "symlink";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "special file";
}

// Names in `dir`, read through a fresh descriptor so the caller's offset is
// not shared.
absl::StatusOr<std::vector<std::string>> ReadDirNames(const DirFd& dir) {
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
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
    errno = 0;
  }
  const int err = errno;
  closedir(d);
  if (err != 0) return ErrnoStatus("listing directory", err);
  return names;
}

absl::Status RemoveTreeAtDepth(const DirFd& dir, const std::string& name, int depth) {
  if (depth > kMaxRemoveDepth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("directory tree below '", name, "' is too deep to remove"));
  }
  if (unlinkat(dir.get(), name.c_str(), 0) == 0 || errno == ENOENT) return absl::OkStatus();
  if (errno != EISDIR && errno != EPERM) return ErrnoStatus(absl::StrCat("removing ", name), errno);
  auto child = dir.OpenOwnChild(name);
  if (!child.ok()) {
    // Swapped for a non-directory since unlinkat looked: try once more.
    if (unlinkat(dir.get(), name.c_str(), 0) == 0 || errno == ENOENT) return absl::OkStatus();
    return child.status();
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ReadDirNames(*child));
  for (const auto& n : names) LAZ_RETURN_IF_ERROR(RemoveTreeAtDepth(*child, n, depth + 1));
  if (unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("removing directory ", name), errno);
  }
  return absl::OkStatus();
}

// Opens `name` below `dir` as O_PATH without following it, and checks it is
// a regular file. Returns the descriptor and its stat.
absl::StatusOr<int> OpenRegularPathAt(const DirFd& dir, const std::string& name, struct stat* st) {
  const int fd = openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", name), errno);
  if (fstat(fd, st) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(absl::StrCat("inspecting ", name), err);
  }
  if (!S_ISREG(st->st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(name, " is a ", TypeName(st->st_mode), ", not a regular file"));
  }
  return fd;
}

// Reopens an O_PATH descriptor of a regular file for reading. The magic link
// refers to the inode already checked, whatever the name points to now.
// With rootless podman the sandbox's root is the developer's own uid, so an
// agent can leave files and directories the developer owns but may not read
// (mode 000). chmod through the O_PATH descriptor's magic link touches the
// checked inode, never a name.
void AddOwnerPermissions(int path_fd, mode_t bits) {
  struct stat st {};
  if (fstat(path_fd, &st) != 0 || st.st_uid != geteuid() || S_ISLNK(st.st_mode)) return;
  if ((st.st_mode & bits) == bits) return;
  chmod(absl::StrCat("/proc/self/fd/", path_fd).c_str(), (st.st_mode & 07777) | bits);
}

absl::StatusOr<int> ReopenForRead(int path_fd) {
  const std::string proc = absl::StrCat("/proc/self/fd/", path_fd);
  int fd = open(proc.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0 && errno == EACCES) {
    AddOwnerPermissions(path_fd, S_IRUSR);
    fd = open(proc.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  }
  if (fd < 0) return ErrnoStatus("reopening a checked file for reading", errno);
  return fd;
}

absl::Status WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("writing", errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

std::string TempName(const std::string& name) {
  return absl::StrCat(".lazaret-tmp-", getpid(), "-", name);
}

// Copies the regular file `name` of `src` to `dst_name` in `dst` through a
// temporary file. Returns the bytes copied.
absl::StatusOr<uint64_t> CopyRegularFile(const DirFd& src, const std::string& name,
                                         const DirFd& dst, const std::string& dst_name,
                                         uint64_t max_bytes) {
  struct stat st {};
  LAZ_ASSIGN_OR_RETURN(int path_fd, OpenRegularPathAt(src, name, &st));
  ScopedFd path_guard(path_fd);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name, " is ", st.st_size, " bytes, over the limit of ", max_bytes));
  }
  LAZ_ASSIGN_OR_RETURN(int in_fd, ReopenForRead(path_fd));
  ScopedFd in(in_fd);
  const std::string tmp = TempName(dst_name);
  unlinkat(dst.get(), tmp.c_str(), 0);
  const int out_fd =
      openat(dst.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (out_fd < 0) return ErrnoStatus(absl::StrCat("creating ", tmp), errno);
  ScopedFd out(out_fd);
  uint64_t total = 0;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(in.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      unlinkat(dst.get(), tmp.c_str(), 0);
      return ErrnoStatus(absl::StrCat("reading ", name), err);
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > max_bytes) {
      unlinkat(dst.get(), tmp.c_str(), 0);
      return absl::ResourceExhaustedError(absl::StrCat(name, " grew over the limit while copied"));
    }
    if (absl::Status s = WriteAll(out.get(), buf, static_cast<size_t>(n)); !s.ok()) {
      unlinkat(dst.get(), tmp.c_str(), 0);
      return s;
    }
  }
  if (renameat(dst.get(), tmp.c_str(), dst.get(), dst_name.c_str()) != 0) {
    const int err = errno;
    unlinkat(dst.get(), tmp.c_str(), 0);
    return ErrnoStatus(absl::StrCat("renaming into ", dst_name), err);
  }
  return total;
}

// Creates directory `name` in `dir` if missing and opens it.
absl::StatusOr<DirFd> EnsureChildDir(const DirFd& dir, const std::string& name) {
  if (mkdirat(dir.get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("creating ", name), errno);
  }
  return dir.OpenOwnChild(name);
}

// Regular-file test that never follows a symlink. Returns the size.
bool RegularFileSize(const DirFd& dir, const std::string& name, uint64_t* size) {
  struct stat st {};
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (!S_ISREG(st.st_mode)) return false;
  *size = static_cast<uint64_t>(st.st_size);
  return true;
}

bool IsDirectory(const DirFd& dir, const std::string& name) {
  struct stat st {};
  return fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

struct SweepState {
  const Classifier* classify;
  const WalkLimits* limits;
  std::vector<std::string>* removed;
  uint64_t entries = 0;
};

absl::Status SweepDir(const DirFd& dir, std::vector<std::string>& rel, SweepState& state) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ReadDirNames(dir));
  for (const auto& name : names) {
    if (++state.entries > state.limits->max_entries) {
      return absl::ResourceExhaustedError(
          absl::StrCat("more than ", state.limits->max_entries, " entries"));
    }
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return ErrnoStatus(absl::StrCat("inspecting ", name), errno);
    }
    rel.push_back(name);
    const std::string path = absl::StrJoin(rel, "/");
    const bool too_deep = static_cast<int>(rel.size()) > state.limits->max_depth;
    if (S_ISDIR(st.st_mode)) {
      if (too_deep || (*state.classify)(rel, EntryKind::kDirectory) == Verdict::kRemove) {
        LAZ_RETURN_IF_ERROR(RemoveTreeAtDepth(dir, name, 0));
        state.removed->push_back(absl::StrCat(path, ": unexpected directory, removed"));
      } else if (auto child = dir.OpenOwnChild(name); child.ok()) {
        LAZ_RETURN_IF_ERROR(SweepDir(*child, rel, state));
      } else {
        // Replaced by something else since fstatat: remove whatever it is.
        LAZ_RETURN_IF_ERROR(RemoveTreeAtDepth(dir, name, 0));
        state.removed->push_back(absl::StrCat(path, ": changed type while swept, removed"));
      }
    } else if (S_ISREG(st.st_mode)) {
      if (too_deep || (*state.classify)(rel, EntryKind::kFile) == Verdict::kRemove) {
        LAZ_RETURN_IF_ERROR(RemoveTreeAtDepth(dir, name, 0));
        state.removed->push_back(absl::StrCat(path, ": unexpected file, removed"));
      }
    } else {
      LAZ_RETURN_IF_ERROR(RemoveTreeAtDepth(dir, name, 0));
      state.removed->push_back(absl::StrCat(path, ": ", TypeName(st.st_mode), ", removed"));
    }
    rel.pop_back();
  }
  return absl::OkStatus();
}

absl::Status ListRefFilesIn(const DirFd& dir, const std::string& prefix, int depth,
                            size_t max_files, std::vector<RefFile>* out, bool* truncated) {
  if (depth > 64) return absl::ResourceExhaustedError("ref tree too deep");
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ReadDirNames(dir));
  for (const auto& name : names) {
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string ref = prefix.empty() ? name : absl::StrCat(prefix, "/", name);
    if (S_ISDIR(st.st_mode)) {
      auto child = dir.OpenOwnChild(name);
      if (!child.ok()) continue;
      LAZ_RETURN_IF_ERROR(ListRefFilesIn(*child, ref, depth + 1, max_files, out, truncated));
      if (truncated != nullptr && *truncated) return absl::OkStatus();
    } else if (S_ISREG(st.st_mode) && !absl::EndsWith(name, ".lock")) {
      if (out->size() >= max_files) {
        if (truncated != nullptr) {
          *truncated = true;
          return absl::OkStatus();
        }
        return absl::ResourceExhaustedError(absl::StrCat("more than ", max_files, " refs"));
      }
      RefFile f;
      f.name = ref;
      auto contents = ReadRegularFileAt(dir, name, 256);
      if (contents.ok()) {
        f.contents = *std::move(contents);
      } else if (contents.status().code() == absl::StatusCode::kResourceExhausted) {
        f.too_long = true;
      } else {
        continue;  // vanished or changed type while listed
      }
      out->push_back(std::move(f));
    }
  }
  return absl::OkStatus();
}

}  // namespace

ScopedFd::~ScopedFd() {
  if (fd_ >= 0) close(fd_);
}

std::string Dirname(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}

std::string Basename(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

DirFd::~DirFd() {
  if (fd_ >= 0) close(fd_);
}

DirFd& DirFd::operator=(DirFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

absl::StatusOr<DirFd> DirFd::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening directory ", path), errno);
  return DirFd(fd);
}

namespace {

absl::Status CheckOneComponent(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not one path component"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DirFd> DirFd::OpenChild(const std::string& name) const {
  LAZ_RETURN_IF_ERROR(CheckOneComponent(name));
  const int fd = openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening directory ", name), errno);
  return DirFd(fd);
}

absl::StatusOr<DirFd> DirFd::OpenOwnChild(const std::string& name) const {
  LAZ_RETURN_IF_ERROR(CheckOneComponent(name));
  int fd = openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES) {
    const int path_fd = openat(fd_, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (path_fd >= 0) {
      AddOwnerPermissions(path_fd, S_IRWXU);
      close(path_fd);
      fd = openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } else {
      errno = EACCES;
    }
  }
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening directory ", name), errno);
  // Entries below must be removable too (a 0555 directory would refuse).
  AddOwnerPermissions(fd, S_IRWXU);
  return DirFd(fd);
}

absl::Status SweepTree(const std::string& root, const Classifier& classify,
                       const WalkLimits& limits, std::vector<std::string>* removed) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  SweepState state{&classify, &limits, removed};
  std::vector<std::string> rel;
  return SweepDir(dir, rel, state);
}

absl::StatusOr<std::vector<std::string>> ListNames(const DirFd& dir) { return ReadDirNames(dir); }

absl::StatusOr<std::string> ReadRegularFileAt(const DirFd& dir, const std::string& name,
                                              uint64_t max_bytes) {
  struct stat st {};
  LAZ_ASSIGN_OR_RETURN(int path_fd, OpenRegularPathAt(dir, name, &st));
  ScopedFd path_guard(path_fd);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(name, " is larger than ", max_bytes));
  }
  LAZ_ASSIGN_OR_RETURN(int fd, ReopenForRead(path_fd));
  ScopedFd in(fd);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(in.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(absl::StrCat("reading ", name), errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(name, " is larger than ", max_bytes));
    }
  }
  return out;
}

absl::Status WriteFileAt(const DirFd& dir, const std::string& name, const std::string& contents,
                         int mode) {
  const std::string tmp = TempName(name);
  unlinkat(dir.get(), tmp.c_str(), 0);
  const int fd =
      openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(absl::StrCat("creating ", tmp), errno);
  ScopedFd out(fd);
  if (absl::Status s = WriteAll(fd, contents.data(), contents.size()); !s.ok()) {
    unlinkat(dir.get(), tmp.c_str(), 0);
    return s;
  }
  if (fchmod(fd, static_cast<mode_t>(mode)) != 0 ||
      renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0) {
    const int err = errno;
    unlinkat(dir.get(), tmp.c_str(), 0);
    return ErrnoStatus(absl::StrCat("writing ", name), err);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RefFile>> ListRefFiles(const std::string& root, size_t max_files,
                                                  bool* truncated) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  std::vector<RefFile> out;
  if (truncated != nullptr) *truncated = false;
  LAZ_RETURN_IF_ERROR(ListRefFilesIn(dir, "", 0, max_files, &out, truncated));
  return out;
}

absl::StatusOr<std::optional<std::string>> ReadRefFileAt(const std::string& root,
                                                         const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  const std::vector<std::string> parts = absl::StrSplit(rel, '/');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    struct stat st {};
    if (fstatat(dir.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return std::optional<std::string>();
      return ErrnoStatus(absl::StrCat("looking at ", rel), errno);
    }
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(parts[i], " is not a directory"));
    }
    LAZ_ASSIGN_OR_RETURN(dir, dir.OpenChild(parts[i]));
  }
  struct stat st {};
  if (fstatat(dir.get(), parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return ErrnoStatus(absl::StrCat("looking at ", rel), errno);
  }
  LAZ_ASSIGN_OR_RETURN(std::string contents, ReadRegularFileAt(dir, parts.back(), 256));
  return std::optional<std::string>(std::move(contents));
}

std::optional<std::string> RegularFileFingerprint(const DirFd& dir, const std::string& name) {
  struct stat st {};
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  return absl::StrCat(st.st_size, " ", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, " ",
                      st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec, " ", st.st_ino);
}

absl::Status RemoveTreeAt(const DirFd& dir, const std::string& name) {
  return RemoveTreeAtDepth(dir, name, 0);
}

absl::Status MirrorObjectFiles(const std::string& src, const std::string& dst, size_t hex_length,
                               const MirrorLimits& limits, MirrorStats* stats) {
  LAZ_ASSIGN_OR_RETURN(DirFd src_dir, DirFd::Open(src));
  LAZ_ASSIGN_OR_RETURN(DirFd dst_dir, DirFd::Open(dst));
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> top, ReadDirNames(src_dir));

  // The importable files of `src`, by directory ("xx" or "pack").
  std::set<std::pair<std::string, std::string>> wanted;
  uint64_t total = 0;
  auto copy = [&](const DirFd& from, const DirFd& to, const std::string& subdir,
                  const std::string& name) -> absl::Status {
    if (wanted.size() >= limits.max_files) {
      return absl::ResourceExhaustedError(
          absl::StrCat("more than ", limits.max_files, " object files"));
    }
    uint64_t src_size = 0;
    if (!RegularFileSize(from, name, &src_size)) return absl::OkStatus();
    wanted.emplace(subdir, name);
    uint64_t dst_size = 0;
    if (RegularFileSize(to, name, &dst_size) && dst_size == src_size) return absl::OkStatus();
    if (total + src_size > limits.max_total_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "sandbox objects exceed the import limit of ", limits.max_total_bytes, " bytes"));
    }
    auto copied = CopyRegularFile(from, name, to, name, limits.max_file_bytes);
    if (!copied.ok()) {
      if (copied.status().code() == absl::StatusCode::kNotFound) {
        wanted.erase({subdir, name});  // gone meanwhile (repacked); fine
        return absl::OkStatus();
      }
      return copied.status();
    }
    total += *copied;
    ++stats->files_copied;
    stats->bytes_copied += *copied;
    return absl::OkStatus();
  };

  for (const auto& sub : top) {
    const bool loose_dir = sub.size() == 2 && IsLowerHex(sub);
    if (!loose_dir && sub != "pack") continue;
    if (!IsDirectory(src_dir, sub)) continue;
    auto from = src_dir.OpenOwnChild(sub);
    if (!from.ok()) continue;
    LAZ_ASSIGN_OR_RETURN(DirFd to, EnsureChildDir(dst_dir, sub));
    LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ReadDirNames(*from));
    for (const auto& name : names) {
      if (loose_dir) {
        if (name.size() == hex_length - 2 && IsLowerHex(name)) {
          LAZ_RETURN_IF_ERROR(copy(*from, to, sub, name));
        }
        continue;
      }
      // A pack counts once git finished it, which its index says. The
      // sandbox's index itself is never copied: host git parses untrusted
      // pack bytes only through `git index-pack`, which rebuilds the index.
      if (!absl::StartsWith(name, "pack-") || !absl::EndsWith(name, ".idx")) continue;
      const std::string base = name.substr(0, name.size() - 4);
      if (!IsPackFileName(name)) continue;
      uint64_t ignored = 0;
      if (!RegularFileSize(*from, base + ".pack", &ignored)) continue;
      if (limits.skip_packs != nullptr) {
        const std::optional<std::string> fp = RegularFileFingerprint(*from, base + ".pack");
        if (fp && limits.skip_packs->count(absl::StrCat(sub, "/", base, ".pack ", *fp)) != 0) {
          continue;  // refused before, unchanged since
        }
      }
      const uint64_t copied_before = stats->files_copied;
      LAZ_RETURN_IF_ERROR(copy(*from, to, sub, base + ".pack"));
      if (wanted.count({sub, base + ".pack"}) == 0) continue;
      wanted.emplace(sub, name);
      if (stats->files_copied != copied_before) unlinkat(to.get(), name.c_str(), 0);
      if (!RegularFileSize(to, name, &ignored)) {
        stats->packs_to_index.push_back(absl::StrCat(sub, "/", base, ".pack"));
      }
    }
  }

  // Drop what `src` no longer has (repacked or pruned inside the sandbox).
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> dst_top, ReadDirNames(dst_dir));
  for (const auto& sub : dst_top) {
    const bool loose_dir = sub.size() == 2 && IsLowerHex(sub);
    if (!loose_dir && sub != "pack") continue;
    auto to = dst_dir.OpenOwnChild(sub);
    if (!to.ok()) continue;
    LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ReadDirNames(*to));
    // Indexes go before their packs so `dst` never has an index alone.
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return absl::EndsWith(a, ".idx") > absl::EndsWith(b, ".idx");
    });
    for (const auto& name : names) {
      if (wanted.count({sub, name}) != 0) continue;
      if (unlinkat(to->get(), name.c_str(), 0) == 0) ++stats->files_removed;
    }
  }
  return absl::OkStatus();
}

}  // namespace lazaret::cli::gitshadow
