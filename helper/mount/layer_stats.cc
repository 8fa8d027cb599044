#include "helper/mount/layer_stats.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "helper/mount/thread_caps.h"
#include "services/common/fs/dir.h"
#include "services/common/status_util.h"

namespace lazaret::mounthelper {
namespace {

constexpr char kWhiteoutPrefix[] = ".wh.";
constexpr char kOpaqueMarker[] = ".wh..wh..opq";
constexpr const char* kOpaqueXattrs[] = {"trusted.overlay.opaque", "user.overlay.opaque",
                                         "user.fuseoverlayfs.opaque"};
// How deep RemoveLayerContents descends before it moves a directory up.
constexpr size_t kRemoveDepth = 32;
constexpr char kMovedPrefix[] = ".lazaret-reset-";

int OpenDirAt(int parent, const std::string& name) {
  return openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// The overlay drivers' own bookkeeping (origin, impure, opaque, ...):
// written by the driver, not by the sandbox, and differing between a
// directory and its copy-up by design.
constexpr const char* kDriverXattrPrefixes[] = {"trusted.overlay.", "user.overlay.",
                                                "user.fuseoverlayfs."};
// Names listed per directory before "+N more".
constexpr size_t kMaxListedXattrs = 3;

bool IsOpaque(int fd) {
  for (const char* x : kOpaqueXattrs) {
    char v[8];
    const ssize_t n = fgetxattr(fd, x, v, sizeof(v));
    if (n == 1 && v[0] == 'y') return true;
  }
  return false;
}

// Reads one of `fd`'s xattrs; nullopt when it is gone meanwhile or
// unreadable (listed as a difference by the caller when the other side
// has it).
std::optional<std::string> ReadXattr(int fd, const std::string& name) {
  std::string value;
  for (int tries = 0; tries < 4; ++tries) {
    const ssize_t size = fgetxattr(fd, name.c_str(), nullptr, 0);
    if (size < 0) return std::nullopt;
    value.resize(static_cast<size_t>(size));
    const ssize_t n = fgetxattr(fd, name.c_str(), value.data(), value.size());
    if (n >= 0) {
      value.resize(static_cast<size_t>(n));
      return value;
    }
    if (errno != ERANGE) return std::nullopt;
  }
  return std::nullopt;
}

// `fd`'s xattrs and their values, but the overlay drivers' own. A
// filesystem without xattrs has none.
std::map<std::string, std::string> AttributeXattrs(int fd) {
  std::map<std::string, std::string> out;
  std::string names;
  for (int tries = 0; tries < 4; ++tries) {
    const ssize_t size = flistxattr(fd, nullptr, 0);
    if (size <= 0) return out;
    names.resize(static_cast<size_t>(size));
    const ssize_t n = flistxattr(fd, names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<size_t>(n));
      break;
    }
    if (errno != ERANGE) return out;
    names.clear();
  }
  size_t start = 0;
  while (start < names.size()) {
    size_t end = names.find('\0', start);
    if (end == std::string::npos) end = names.size();
    std::string name = names.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    bool own = false;
    for (const char* prefix : kDriverXattrPrefixes) own = own || absl::StartsWith(name, prefix);
    if (own) continue;
    std::optional<std::string> value = ReadXattr(fd, name);
    out.emplace(std::move(name), value ? std::move(*value) : std::string("\0unreadable", 11));
  }
  return out;
}

// What makes the upper layer's directory `upper` differ from the image's
// `lower` in who may use it: mode, owner, group, ACLs and other xattrs.
// Empty when nothing does (a plain copy-up). Xattr names are the
// sandbox's and only ever reported.
std::string AttributeChanges(int upper, int lower) {
  struct stat u {};
  struct stat l {};
  if (fstat(upper, &u) != 0 || fstat(lower, &l) != 0) return "";
  std::vector<std::string> parts;
  if ((u.st_mode & 07777) != (l.st_mode & 07777)) {
    parts.push_back(absl::StrFormat("mode %04o->%04o", l.st_mode & 07777, u.st_mode & 07777));
  }
  if (u.st_uid != l.st_uid) parts.push_back(absl::StrCat("owner ", l.st_uid, "->", u.st_uid));
  if (u.st_gid != l.st_gid) parts.push_back(absl::StrCat("group ", l.st_gid, "->", u.st_gid));
  const std::map<std::string, std::string> ux = AttributeXattrs(upper);
  const std::map<std::string, std::string> lx = AttributeXattrs(lower);
  std::vector<std::string> differing;
  for (const auto& [name, value] : ux) {
    auto it = lx.find(name);
    if (it == lx.end() || it->second != value) differing.push_back(name);
  }
  for (const auto& [name, value] : lx) {
    if (!ux.contains(name)) differing.push_back(name);
  }
  std::sort(differing.begin(), differing.end());
  std::vector<std::string> xattrs;
  for (const std::string& name : differing) {
    if (name == "system.posix_acl_access") {
      parts.push_back("ACL");
    } else if (name == "system.posix_acl_default") {
      parts.push_back("default ACL");
    } else {
      xattrs.push_back(name);
    }
  }
  if (!xattrs.empty()) {
    const size_t more = xattrs.size() > kMaxListedXattrs ? xattrs.size() - kMaxListedXattrs : 0;
    xattrs.resize(xattrs.size() - more);
    parts.push_back(absl::StrCat("xattr", xattrs.size() + more == 1 ? " " : "s ",
                                 absl::StrJoin(xattrs, " "),
                                 more > 0 ? absl::StrCat(" +", more, " more") : ""));
  }
  return absl::StrJoin(parts, ", ");
}

// The kMaxListedPaths smallest paths seen, and how many were seen.
class Smallest {
 public:
  void Add(std::string path) {
    ++total_;
    if (kept_.size() >= kMaxListedPaths && !(path < *kept_.rbegin())) return;
    kept_.insert(std::move(path));
    if (kept_.size() > kMaxListedPaths) kept_.erase(std::prev(kept_.end()));
  }
  uint64_t total() const { return total_; }
  std::vector<std::string> Sorted() const { return {kept_.begin(), kept_.end()}; }

 private:
  std::set<std::string> kept_;
  uint64_t total_ = 0;
};

// One directory on the walk's stack. Its descriptor is closed while the
// stack holds more than kMaxOpenDirs open ones, and opened again by name
// (from the deepest open ancestor, never following a symlink) when the
// walk comes back to it; dev/ino tell that it is still the same directory.
// `lower` is the image's directory at the same path, when the walk
// compares and the image has one; it is closed and opened again with `fd`.
struct Frame {
  std::string name;  // in its parent; empty for the layer's root
  fs::UniqueFd fd;
  fs::UniqueFd lower;
  bool has_lower = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::vector<std::string> names;
  size_t next = 0;
};

class StatWalk {
 public:
  StatWalk(bool fuse, bool compare) : fuse_(fuse), compare_(compare) {}

  absl::StatusOr<LayerStats> Run(const fs::DirFd& upper, const fs::DirFd* lower) {
    const int root = openat(upper.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return ErrnoStatus("opening the upper layer", errno);
    Frame f;
    f.fd = fs::UniqueFd(root);
    LAZ_ASSIGN_OR_RETURN(f.names, fs::ListNames(upper));
    ++open_;
    if (lower != nullptr) {
      const int l = openat(lower->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (l < 0) return ErrnoStatus("opening the image's directory", errno);
      f.lower = fs::UniqueFd(l);
      f.has_lower = true;
      ++open_;
      // D itself: the sandbox's chmod or chown of the persistent
      // directory is kept in the upper layer's root.
      const std::string attrs = AttributeChanges(root, l);
      if (!attrs.empty()) changed_.Add(absl::StrCat("./ (", attrs, ")"));
    }
    stack_.push_back(std::move(f));
    while (!stack_.empty()) {
      if (stats_.files >= kMaxStatEntries) {
        Limit(absl::StrCat("the walk stopped after ", kMaxStatEntries, " entries"));
        break;
      }
      Frame& top = stack_.back();
      if (top.next >= top.names.size()) {
        Pop();
        continue;
      }
      const std::string name = top.names[top.next++];
      if (!EnsureOpen(stack_.size() - 1)) {
        Limit(absl::StrCat(PathOf(""), " changed while it was walked; walk again"));
        Pop();
        continue;
      }
      Visit(name);
    }
    stats_.changed = changed_.Sorted();
    stats_.changed_total = changed_.total();
    stats_.deleted = deleted_.Sorted();
    stats_.deleted_total = deleted_.total();
    return stats_;
  }

 private:
  // `name` below the top of the stack, relative to the layer's root.
  std::string PathOf(const std::string& name) const {
    std::string out;
    for (size_t i = 1; i < stack_.size(); ++i) absl::StrAppend(&out, stack_[i].name, "/");
    absl::StrAppend(&out, name);
    if (name.empty() && !out.empty()) out.pop_back();
    return out;
  }

  void Limit(const std::string& what) {
    if (stats_.limit.empty()) {
      stats_.limit = what;
    } else if (stats_.limit.size() < 1024) {
      absl::StrAppend(&stats_.limit, "; ", what);
    }
  }

  void Visit(const std::string& name) {
    const int dir = stack_.back().fd.get();
    struct stat st {};
    if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;  // gone meanwhile
    ++stats_.files;
    const bool fuse_whiteout = fuse_ && absl::StartsWith(name, kWhiteoutPrefix);
    if (fuse_whiteout && name != kOpaqueMarker) {
      deleted_.Add(PathOf(name.substr(sizeof(kWhiteoutPrefix) - 1)));
    }
    if (!S_ISDIR(st.st_mode)) {
      stats_.bytes += static_cast<uint64_t>(st.st_size);
      if (fuse_whiteout) return;
      if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
        deleted_.Add(PathOf(name));
      } else {
        changed_.Add(PathOf(name));
      }
      return;
    }
    if (stack_.size() > static_cast<size_t>(kMaxStatDepth)) {
      Limit(absl::StrCat("directories deeper than ", kMaxStatDepth,
                         " levels were not walked (first: ", PathOf(name), ")"));
      return;
    }
    const int fd = OpenDirAt(dir, name);
    if (fd < 0) {
      Limit(absl::StrCat("could not open ", PathOf(name), ": ", strerror(errno)));
      return;
    }
    Frame f;
    f.name = name;
    f.fd = fs::UniqueFd(fd);
    f.dev = st.st_dev;
    f.ino = st.st_ino;
    absl::StatusOr<std::vector<std::string>> names = fs::ListNames(fs::DirFd::Adopt(dup(fd)));
    if (!names.ok()) {
      Limit(absl::StrCat("could not list ", PathOf(name), ": ", names.status().message()));
      return;
    }
    f.names = std::move(*names);
    if (compare_ && stack_.back().has_lower && !fuse_whiteout) {
      const int l = OpenDirAt(stack_.back().lower.get(), name);
      if (l >= 0) {
        f.lower = fs::UniqueFd(l);
        f.has_lower = true;
      } else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) {
        // ENOTDIR, ELOOP: the image has no directory there (a file or a
        // symlink the sandbox replaced), so this one is new.
        Limit(absl::StrCat("could not open the image's ", PathOf(name), ": ", strerror(errno)));
      }
    }
    if (!fuse_whiteout) {
      // Only a directory the sandbox made or re-attributed is left with
      // nothing in it (fuse-overlayfs puts its opaque marker in each one it
      // makes); any other shows through what is listed below it. Compared
      // with the image, a re-attributed one is listed whatever it holds,
      // with what changed, and a new one only when nothing below it is.
      const bool empty = f.names.empty() || (fuse_ && f.names.size() == 1 &&
                                             f.names[0] == kOpaqueMarker);
      if (f.has_lower) {
        const std::string attrs = AttributeChanges(fd, f.lower.get());
        if (!attrs.empty()) changed_.Add(absl::StrCat(PathOf(name), "/ (", attrs, ")"));
      } else if (empty) {
        changed_.Add(PathOf(name));
      }
      // The kernel's overlayfs makes a directory opaque only where it
      // replaced one of the image's: all the image had below it is gone.
      // fuse-overlayfs marks every directory it makes, so there it says
      // nothing about the image.
      if (!fuse_ && IsOpaque(fd)) deleted_.Add(PathOf(name) + "/");
    }
    open_ += f.has_lower ? 2 : 1;
    stack_.push_back(std::move(f));
    Budget(stack_.size() - 1);
  }

  void Pop() {
    Close(stack_.back());
    stack_.pop_back();
  }

  void Close(Frame& f) {
    if (f.fd.get() >= 0) {
      f.fd = fs::UniqueFd();
      --open_;
    }
    if (f.lower.get() >= 0) {
      f.lower = fs::UniqueFd();
      --open_;
    }
  }

  // Closes the shallowest open descriptors (never the root's, nor `keep`
  // and deeper ones) until at most kMaxOpenDirs are open.
  void Budget(size_t keep) {
    for (size_t i = 1; i < keep && open_ > kMaxOpenDirs; ++i) Close(stack_[i]);
  }

  bool EnsureOpen(size_t i) {
    if (stack_[i].fd.get() >= 0) return true;
    size_t j = i;
    while (stack_[j].fd.get() < 0) --j;  // the root's is always open
    for (size_t k = j + 1; k <= i; ++k) {
      const int fd = OpenDirAt(stack_[k - 1].fd.get(), stack_[k].name);
      if (fd < 0) return false;
      struct stat st {};
      if (fstat(fd, &st) != 0 || st.st_dev != stack_[k].dev || st.st_ino != stack_[k].ino) {
        close(fd);
        return false;
      }
      stack_[k].fd = fs::UniqueFd(fd);
      ++open_;
      if (stack_[k].has_lower) {
        // The image is read-only: the same name is the same directory.
        const int l = OpenDirAt(stack_[k - 1].lower.get(), stack_[k].name);
        if (l < 0) return false;
        stack_[k].lower = fs::UniqueFd(l);
        ++open_;
      }
      Budget(k);
    }
    return true;
  }

  const bool fuse_;
  const bool compare_;
  LayerStats stats_;
  Smallest changed_;
  Smallest deleted_;
  std::vector<Frame> stack_;
  size_t open_ = 0;
};

// Moves the directory `name` of `parent` up to `top` under a new name, so
// that the walk that removes it starts again near the top.
absl::Status MoveUp(int parent, const std::string& name, int top, uint64_t& counter) {
  for (int tries = 0; tries < 1000; ++tries) {
    const std::string to = absl::StrCat(kMovedPrefix, counter++);
    if (renameat2(parent, name.c_str(), top, to.c_str(), RENAME_NOREPLACE) == 0) {
      return absl::OkStatus();
    }
    if (errno == EINVAL) {
      // fuse2fs (a rootless layer's file system) has no RENAME_NOREPLACE.
      // Nothing else writes a layer while it is reset (no session holds
      // it), so a name found free stays free until the rename.
      struct stat st {};
      if (fstatat(top, to.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
      if (errno != ENOENT) return ErrnoStatus(absl::StrCat("moving up ", name), errno);
      if (renameat(parent, name.c_str(), top, to.c_str()) == 0) return absl::OkStatus();
    }
    if (errno != EEXIST) return ErrnoStatus(absl::StrCat("moving up ", name), errno);
  }
  return absl::InternalError(absl::StrCat("no free name to move up ", name));
}

// Removes `name` below `top`: iteratively, never more than kRemoveDepth
// directories open; deeper directories are moved up to `top` (removed by
// the caller's next pass).
absl::Status RemoveEntry(int top, const std::string& name, uint64_t& counter) {
  if (unlinkat(top, name.c_str(), 0) == 0 || errno == ENOENT) return absl::OkStatus();
  if (errno != EISDIR) return ErrnoStatus(absl::StrCat("removing ", name), errno);
  std::vector<Frame> stack;
  const auto path = [&stack](const std::string& leaf) {
    std::string out;
    for (const Frame& f : stack) absl::StrAppend(&out, f.name, "/");
    return absl::StrCat(out, leaf);
  };
  const auto push = [&](int parent, const std::string& n) -> absl::Status {
    const int fd = OpenDirAt(parent, n);
    if (fd < 0) {
      if (errno == ENOENT) return absl::OkStatus();
      return ErrnoStatus(absl::StrCat("opening directory ", path(n)), errno);
    }
    Frame f;
    f.name = n;
    f.fd = fs::UniqueFd(fd);
    absl::StatusOr<std::vector<std::string>> names = fs::ListNames(fs::DirFd::Adopt(dup(fd)));
    if (!names.ok()) {
      return absl::Status(names.status().code(),
                          absl::StrCat(path(n), ": ", names.status().message()));
    }
    f.names = std::move(*names);
    stack.push_back(std::move(f));
    return absl::OkStatus();
  };
  LAZ_RETURN_IF_ERROR(push(top, name));
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next >= f.names.size()) {
      const std::string done = f.name;
      stack.pop_back();
      const int parent = stack.empty() ? top : stack.back().fd.get();
      if (unlinkat(parent, done.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return ErrnoStatus(absl::StrCat("removing directory ", path(done)), errno);
      }
      continue;
    }
    const std::string n = f.names[f.next++];
    const int dir = f.fd.get();
    if (unlinkat(dir, n.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR) return ErrnoStatus(absl::StrCat("removing ", path(n)), errno);
    if (stack.size() >= kRemoveDepth) {
      LAZ_RETURN_IF_ERROR(MoveUp(dir, n, top, counter));
      continue;
    }
    LAZ_RETURN_IF_ERROR(push(dir, n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LayerStats> StatLayer(const fs::DirFd& upper, std::optional<OverlayDriver> driver,
                                     const fs::DirFd* lower) {
  // Reading directories of any owner and mode: the sandbox's chmod 0000 or
  // chown of a directory must not hide what is in it.
  ThreadCapsInEffect caps({CAP_DAC_OVERRIDE});
  return StatWalk(driver == OverlayDriver::kFuse, lower != nullptr).Run(upper, lower);
}

absl::Status RemoveLayerContents(const fs::DirFd& dir) {
  // DAC_OVERRIDE: list, enter and unlink in directories of any owner and
  // mode; FOWNER: unlink other owners' entries of a sticky directory.
  ThreadCapsInEffect caps({CAP_DAC_OVERRIDE, CAP_FOWNER});
  uint64_t counter = 0;
  while (true) {
    LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(dir));
    if (names.empty()) return absl::OkStatus();
    for (const std::string& n : names) LAZ_RETURN_IF_ERROR(RemoveEntry(dir.get(), n, counter));
  }
}

}  // namespace lazaret::mounthelper
