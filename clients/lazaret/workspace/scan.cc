#include "clients/lazaret/workspace/scan.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/gitshadow/tree.h"
#include "clients/lazaret/subprocess.h"
#include "lazaret/common/v1/common.pb.h"
#include "services/common/sha256.h"
#include "services/common/status_util.h"

namespace lazaret::cli::workspace {
namespace {

using gitshadow::Basename;
using gitshadow::DirFd;
using gitshadow::Dirname;
using gitshadow::ListNames;
using gitshadow::ScopedFd;

constexpr char kCapabilityXattr[] = "security.capability";
constexpr uint64_t kMaxFingerprintFileBytes = 4ull << 20;
constexpr size_t kMaxHooks = 4096;
constexpr size_t kMaxEditorFilesShown = 50;

bool NotBefore(const timespec& t, const timespec& since) {
  return t.tv_sec > since.tv_sec || (t.tv_sec == since.tv_sec && t.tv_nsec >= since.tv_nsec);
}

std::string ProcFd(int fd) { return absl::StrCat("/proc/self/fd/", fd); }

std::string Join(const std::string& root, const std::string& rel) {
  if (rel.empty() || rel == ".") return root;
  return absl::StrCat(root, "/", rel);
}

// "alice (uid 1000, gid 1000)", "uid 1000", "group staff (gid 50)": who a
// root's entries are handed back to.
std::string OwnerName(const ScanRoot& root) {
  std::vector<std::string> ids;
  std::string name;
  if (root.owner_uid.has_value()) {
    ids.push_back(absl::StrCat("uid ", *root.owner_uid));
    if (const passwd* pw = getpwuid(*root.owner_uid); pw != nullptr) name = pw->pw_name;
  }
  if (root.owner_gid.has_value()) {
    ids.push_back(absl::StrCat("gid ", *root.owner_gid));
    if (!root.owner_uid.has_value()) {
      if (const group* gr = getgrgid(*root.owner_gid); gr != nullptr) {
        name = absl::StrCat("group ", gr->gr_name);
      }
    }
  }
  const std::string joined = absl::StrJoin(ids, ", ");
  return name.empty() ? joined : absl::StrCat(name, " (", joined, ")");
}

// Reads a regular file below `dir` for a fingerprint, never changing its
// mode (an unreadable file is fingerprinted by identity and ctime).
std::string FileField(const DirFd& dir, const std::string& name) {
  const int fd = openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? "absent" : absl::StrCat("error ", errno);
  ScopedFd guard(fd);
  struct stat st {};
  if (fstat(fd, &st) != 0) return absl::StrCat("error ", errno);
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    const ssize_t n = readlinkat(dir.get(), name.c_str(), target, sizeof(target));
    return absl::StrCat("symlink ", n < 0 ? "?" : std::string(target, static_cast<size_t>(n)));
  }
  if (S_ISDIR(st.st_mode)) return "directory";
  if (!S_ISREG(st.st_mode)) return absl::StrCat("special ", st.st_mode & S_IFMT);
  const std::string identity = absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_size);
  if (static_cast<uint64_t>(st.st_size) > kMaxFingerprintFileBytes) {
    return absl::StrCat("large ", identity, " ", st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec);
  }
  // O_NOATIME: reading for a fingerprint is not a use of the file.
  int rfd = open(ProcFd(fd).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOATIME);
  if (rfd < 0 && errno == EPERM) rfd = open(ProcFd(fd).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (rfd < 0) {
    return absl::StrCat("unreadable ", identity, " ", st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec);
  }
  ScopedFd in(rfd);
  std::string out = "file ";
  char buf[1 << 14];
  for (;;) {
    const ssize_t n = read(rfd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::StrCat("unreadable ", identity);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxFingerprintFileBytes + 8) return absl::StrCat("grew ", identity);
  }
  return out;
}

// What host git takes orders from in a git directory: its identity, config,
// config.worktree, commondir, gitdir and every hook. Not HEAD, refs or
// objects, which the developer's own git changes while the session runs.
std::string GitDirFingerprint(const DirFd& gitdir) {
  Sha256 h;
  struct stat st {};
  if (fstat(gitdir.get(), &st) == 0) h.UpdateField(absl::StrCat("dir ", st.st_dev, ":", st.st_ino));
  for (const char* name : {"config", "config.worktree", "commondir", "gitdir"}) {
    h.UpdateField(name);
    h.UpdateField(FileField(gitdir, name));
  }
  h.UpdateField("hooks");
  h.UpdateField(FileField(gitdir, "hooks"));
  if (auto hooks = gitdir.OpenChild("hooks"); hooks.ok()) {
    auto names = ListNames(*hooks);
    if (!names.ok()) {
      h.UpdateField("unlistable");
    } else {
      std::sort(names->begin(), names->end());
      if (names->size() > kMaxHooks) names->resize(kMaxHooks);
      for (const auto& n : *names) {
        h.UpdateField(n);
        h.UpdateField(FileField(*hooks, n));
      }
    }
  }
  return h.HexDigest();
}

std::string GitFileFingerprint(const DirFd& parent, const struct stat& st) {
  Sha256 h;
  h.UpdateField(absl::StrCat("gitfile ", st.st_dev, ":", st.st_ino));
  h.UpdateField(FileField(parent, ".git"));
  return h.HexDigest();
}

// Raises the soft descriptor limit so a walk can hold one directory
// descriptor per level down to `depth`. Returns the depth it can afford.
int AffordableDepth(int depth) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return std::min(depth, 512);
  const rlim_t want = static_cast<rlim_t>(depth) + 256;
  if (rl.rlim_cur < want) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want) return depth;
  return std::max(16, static_cast<int>(rl.rlim_cur) - 256);
}

enum class Purpose { kSnapshot, kEnd, kStrip };

struct FoundGitDir {
  std::string rel;  // "." for the root
  std::string kind;
  std::string print;
  bool layout = false;  // a directory (HEAD renamed), else a `.git` entry
};

// A directory that could not be checked: deeper than the limit, or not
// readable.
struct Unchecked {
  std::string rel;
  std::string why;
  bool agent_made = false;
};

// One walk of one root. Holds one descriptor per level.
class Walk {
 public:
  Walk(Purpose purpose, const ScanRoot& root, const timespec& since, const ScanLimits& limits,
       int max_depth, std::vector<std::string>* stripped)
      : purpose_(purpose),
        root_(root),
        since_(since),
        limits_(limits),
        max_depth_(max_depth),
        stripped_(stripped) {}

  absl::Status Run() {
    LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root_.path));
    if (HandsBack()) {
      // The root itself: the agent can chown /workspace too.
      struct stat st {};
      if (fstat(dir.get(), &st) == 0 && NotBefore(st.st_ctim, since_) && NotTheOwners(st)) {
        GiveBack(dir.get(), root_.path, &st);
      }
    }
    (void)Dir(dir, "", 0, false);
    return absl::OkStatus();
  }

  uint64_t handed_back() const { return handed_back_; }

  bool complete() const { return complete_; }
  std::vector<FoundGitDir>& git_dirs() { return git_dirs_; }
  std::vector<Unchecked>& unchecked() { return unchecked_; }
  std::vector<std::string>& editor_files() { return editor_files_; }
  std::vector<std::string>& problems() { return problems_; }

 private:
  bool FindsGitDirs() const { return purpose_ != Purpose::kStrip; }
  bool Strips() const { return purpose_ != Purpose::kSnapshot; }
  bool HandsBack() const {
    return Strips() && root_.hand_back_ownership &&
           (root_.owner_uid.has_value() || root_.owner_gid.has_value());
  }
  bool NotTheOwners(const struct stat& st) const {
    return (root_.owner_uid.has_value() && st.st_uid != *root_.owner_uid) ||
           (root_.owner_gid.has_value() && st.st_gid != *root_.owner_gid);
  }

  // Gives the inode `fd` refers to (an O_PATH descriptor, or the root's own
  // directory descriptor) to the root's owner; `st` is that descriptor's
  // own fstat, and is refreshed. AT_EMPTY_PATH on an O_PATH descriptor of a
  // symlink changes the symlink itself (lchown), never its target. The
  // kernel clears setuid/setgid bits and file capabilities of a regular
  // file it chowns; that is reported like the strip would have.
  void GiveBack(int fd, const std::string& path, struct stat* st) {
    const uid_t uid = root_.owner_uid.value_or(static_cast<uid_t>(-1));
    const gid_t gid = root_.owner_gid.value_or(static_cast<gid_t>(-1));
    const bool had_caps = S_ISREG(st->st_mode) && (st->st_mode & 0111) != 0 &&
                          getxattr(ProcFd(fd).c_str(), kCapabilityXattr, nullptr, 0) >= 0;
    if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH) != 0) {
      problems_.push_back(absl::StrCat(path, ": could not be given to ", OwnerName(root_), ": ",
                                       std::strerror(errno), "; it stays owned by uid ", st->st_uid,
                                       ", gid ", st->st_gid));
      return;
    }
    ++handed_back_;
    const mode_t before = st->st_mode & 07777;
    if (fstat(fd, st) != 0) return;
    const mode_t after = st->st_mode & 07777;
    std::vector<std::string> what;
    if ((before & ~after & (S_ISUID | S_ISGID)) != 0) {
      std::vector<std::string> bits;
      if (before & ~after & S_ISUID) bits.push_back("setuid");
      if (before & ~after & S_ISGID) bits.push_back("setgid");
      what.push_back(absl::StrFormat("%s bit%s (mode %04o -> %04o)", absl::StrJoin(bits, "+"),
                                     bits.size() > 1 ? "s" : "", before, after));
    }
    if (had_caps && getxattr(ProcFd(fd).c_str(), kCapabilityXattr, nullptr, 0) < 0) {
      what.push_back("file capabilities (security.capability)");
    }
    if (!what.empty() && stripped_ != nullptr) {
      stripped_->push_back(absl::StrCat(path, ": removed ", absl::StrJoin(what, "; "),
                                        " by giving it to ", OwnerName(root_)));
    }
  }

  // What the session created or changed and someone else owns (host root,
  // or any uid the agent chose) goes to the root's owner.
  void MaybeGiveBack(const DirFd& dir, const std::string& name, const std::string& rel,
                     struct stat* st) {
    if (!HandsBack() || !NotBefore(st->st_ctim, since_) || !NotTheOwners(*st)) return;
    const int fd = openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    ScopedFd guard(fd);
    // Only this inode from here on: its own fstat decides.
    struct stat fst {};
    if (fstat(fd, &fst) != 0 || !NotTheOwners(fst)) return;
    GiveBack(fd, Join(root_.path, rel), &fst);
    *st = fst;
  }

  static bool Exists(const DirFd& dir, const char* name, struct stat* st) {
    return fstatat(dir.get(), name, st, AT_SYMLINK_NOFOLLOW) == 0;
  }

  // setup.c is_git_directory(): HEAD, and objects/ and refs/ here or in the
  // directory commondir names. Conservative: any HEAD but a directory, any
  // objects/refs/commondir of any type (git follows symlinks there).
  void CheckLayout(const DirFd& dir, const std::string& rel) {
    struct stat st {};
    if (!Exists(dir, "HEAD", &st) || S_ISDIR(st.st_mode)) return;
    const bool commondir = Exists(dir, "commondir", &st);
    const bool objects_refs = Exists(dir, "objects", &st) && Exists(dir, "refs", &st);
    if (!commondir && !objects_refs) return;
    FoundGitDir f;
    f.rel = rel.empty() ? "." : rel;
    f.layout = true;
    const std::string base = rel.substr(rel.rfind('/') + 1);
    if (base == ".git") {
      f.kind = "nested .git directory";
    } else if (commondir) {
      f.kind = "git directory with commondir (worktree layout)";
    } else {
      f.kind = "bare repository layout";
    }
    f.print = GitDirFingerprint(dir);
    git_dirs_.push_back(std::move(f));
  }

  void MaybeStrip(const DirFd& dir, const std::string& name, const std::string& rel,
                  const struct stat& st) {
    if (!NotBefore(st.st_ctim, since_)) return;
    const bool reg = S_ISREG(st.st_mode);
    if (!reg && !S_ISDIR(st.st_mode)) return;
    // File capabilities only act on an executable; the chmod that makes
    // one executable later changes its ctime, so the next sweep sees it.
    const bool may_have_caps = reg && (st.st_mode & 0111) != 0;
    if (!may_have_caps && (st.st_mode & (S_ISUID | S_ISGID)) == 0) return;
    const int fd = openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    ScopedFd guard(fd);
    // From here on only this inode: its own fstat decides, and the magic
    // link changes it whatever the name points to now.
    struct stat fst {};
    if (fstat(fd, &fst) != 0) return;
    const bool freg = S_ISREG(fst.st_mode);
    if (!freg && !S_ISDIR(fst.st_mode)) return;
    const std::string proc = ProcFd(fd);
    const std::string path = Join(root_.path, rel);
    std::vector<std::string> what;
    mode_t mode = fst.st_mode & 07777;
    if ((mode & (S_ISUID | S_ISGID)) != 0) {
      const mode_t to = mode & ~static_cast<mode_t>(S_ISUID | S_ISGID);
      if (chmod(proc.c_str(), to) == 0) {
        std::vector<std::string> bits;
        if (mode & S_ISUID) bits.push_back("setuid");
        if (mode & S_ISGID) bits.push_back("setgid");
        what.push_back(absl::StrFormat("%s bit%s (mode %04o -> %04o)", absl::StrJoin(bits, "+"),
                                       bits.size() > 1 ? "s" : "", mode, to));
        mode = to;
      } else {
        problems_.push_back(absl::StrCat(
            path, ": could not remove its setuid/setgid bits: ", std::strerror(errno)));
      }
    }
    if (freg && (fst.st_mode & 0111) != 0 &&
        getxattr(proc.c_str(), kCapabilityXattr, nullptr, 0) >= 0) {
      if (removexattr(proc.c_str(), kCapabilityXattr) == 0) {
        what.push_back("file capabilities (security.capability)");
      } else {
        const int err = errno;
        // Fail safe: a file whose capabilities stay must not be executable.
        const mode_t to = mode & ~static_cast<mode_t>(0111);
        if (chmod(proc.c_str(), to) == 0) {
          what.push_back(absl::StrFormat(
              "execute bits (mode %04o -> %04o): its file capabilities could not be removed (%s)",
              mode, to, std::strerror(err)));
        } else {
          problems_.push_back(absl::StrCat(
              path, ": has file capabilities that could not be removed: ", std::strerror(err)));
        }
      }
    }
    if (!what.empty() && stripped_ != nullptr) {
      stripped_->push_back(absl::StrCat(path, ": removed ", absl::StrJoin(what, "; ")));
    }
  }

  // Returns whether anything in `dir` was created or changed at or after
  // since_ (or could not be checked).
  bool Dir(const DirFd& dir, const std::string& rel, int depth, bool in_protected_git) {
    absl::StatusOr<std::vector<std::string>> names = ListNames(dir);
    if (!names.ok()) {
      complete_ = false;
      problems_.push_back(absl::StrCat(Join(root_.path, rel), ": could not be listed (",
                                       names.status().message(), "); not checked"));
      return true;
    }
    if (FindsGitDirs() && !in_protected_git) CheckLayout(dir, rel);
    bool any = false;
    for (const std::string& name : *names) {
      if (++entries_ > limits_.max_entries) {
        if (complete_ || !entries_reported_) {
          problems_.push_back(absl::StrCat("more than ", limits_.max_entries, " entries below ",
                                           root_.path, "; the rest was not checked"));
          entries_reported_ = true;
        }
        complete_ = false;
        return true;
      }
      struct stat st {};
      if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      const std::string crel = rel.empty() ? name : absl::StrCat(rel, "/", name);
      bool changed = NotBefore(st.st_ctim, since_);
      const bool protected_git = depth == 0 && name == ".git" && root_.root_git_protected;
      if (FindsGitDirs() && name == ".git" && !S_ISDIR(st.st_mode) && !protected_git &&
          !in_protected_git) {
        FoundGitDir f;
        f.rel = crel;
        f.kind = S_ISLNK(st.st_mode) ? "symlinked .git" : "gitfile (.git file)";
        f.print = GitFileFingerprint(dir, st);
        git_dirs_.push_back(std::move(f));
      }
      if (Strips()) {
        MaybeGiveBack(dir, name, crel, &st);
        MaybeStrip(dir, name, crel, st);
      }
      if (S_ISDIR(st.st_mode)) {
        // The snapshot does not need the Git Shadow's own repository; the
        // strip does (the agent writes its objects and refs).
        if (protected_git && purpose_ == Purpose::kSnapshot) continue;
        if (depth + 1 >= max_depth_) {
          complete_ = false;
          unchecked_.push_back(
              {crel, absl::StrCat("deeper than ", max_depth_, " levels"), changed});
          changed = true;
        } else if (absl::StatusOr<DirFd> child = dir.OpenChild(name); child.ok()) {
          changed = Dir(*child, crel, depth + 1, in_protected_git || protected_git) || changed;
        } else {
          complete_ = false;
          unchecked_.push_back({crel, std::string(child.status().message()), changed});
          changed = true;
        }
      }
      if (purpose_ == Purpose::kEnd && changed && !in_protected_git && !protected_git &&
          IsEditorActedOnName(name)) {
        editor_files_.push_back(
            absl::StrCat(Join(root_.path, crel), S_ISDIR(st.st_mode) ? "/" : ""));
      }
      any = any || changed;
    }
    return any;
  }

  const Purpose purpose_;
  const ScanRoot& root_;
  const timespec since_;
  const ScanLimits& limits_;
  const int max_depth_;
  std::vector<std::string>* stripped_;
  uint64_t handed_back_ = 0;
  uint64_t entries_ = 0;
  bool entries_reported_ = false;
  bool complete_ = true;
  std::vector<FoundGitDir> git_dirs_;
  std::vector<Unchecked> unchecked_;
  std::vector<std::string> editor_files_;
  std::vector<std::string> problems_;
};

// Opens the directory `rel` ("" or "." for the root) below `root`, one
// component at a time, never following a symlink.
absl::StatusOr<DirFd> OpenRel(const std::string& root, const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  if (rel.empty() || rel == ".") return dir;
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    LAZ_ASSIGN_OR_RETURN(dir, dir.OpenChild(std::string(part)));
  }
  return dir;
}

// Renames `from` to `from` + suffix (or suffix-2, -3, ...) inside `dir`,
// never replacing anything, and puts the directory's own times back.
absl::StatusOr<std::string> RenameAside(const DirFd& dir, const std::string& from,
                                        const std::string& suffix) {
  struct stat before {};
  const bool have_times = fstat(dir.get(), &before) == 0;
  std::string to;
  for (int i = 1; i <= 100; ++i) {
    to = absl::StrCat(from, suffix, i == 1 ? "" : absl::StrCat("-", i));
    if (renameat2(dir.get(), from.c_str(), dir.get(), to.c_str(), RENAME_NOREPLACE) == 0) {
      if (have_times) {
        const timespec times[2] = {before.st_atim, before.st_mtim};
        (void)futimens(dir.get(), times);
      }
      return to;
    }
    if (errno != EEXIST) return ErrnoStatus(absl::StrCat("renaming ", from), errno);
  }
  return absl::AlreadyExistsError(absl::StrCat("no free quarantine name for ", from));
}

void Neutralise(const ScanRoot& root, const FoundGitDir& f, const std::string& suffix,
                PlantedRepository* out) {
  const std::string path = Join(root.path, f.rel);
  const std::string parent_rel = f.rel == "." ? "" : Dirname(f.rel);
  const std::string base = Basename(f.rel);
  const bool rename_entry = !f.layout || base == ".git";
  std::vector<std::string> undo;  // shell commands, in the order they run
  if (f.layout) {
    absl::StatusOr<DirFd> dir = OpenRel(root.path, f.rel);
    if (!dir.ok()) {
      out->error = std::string(dir.status().message());
      return;
    }
    absl::StatusOr<std::string> head = RenameAside(*dir, "HEAD", suffix);
    if (!head.ok()) {
      out->error = std::string(head.status().message());
      return;
    }
    undo.push_back(absl::StrCat("mv ", ShellQuote(absl::StrCat(path, "/", *head)), " ",
                                ShellQuote(absl::StrCat(path, "/HEAD"))));
  }
  std::string now_at = path;
  if (rename_entry) {
    absl::StatusOr<DirFd> parent = OpenRel(root.path, parent_rel);
    absl::StatusOr<std::string> to =
        parent.ok() ? RenameAside(*parent, base, suffix) : parent.status();
    if (!to.ok()) {
      out->error = std::string(to.status().message());
      if (undo.empty()) return;
    } else {
      now_at = Join(root.path, parent_rel.empty() ? *to : absl::StrCat(parent_rel, "/", *to));
      // The entry comes back first, then its HEAD (whose path names it).
      undo.insert(undo.begin(), absl::StrCat("mv ", ShellQuote(now_at), " ", ShellQuote(path)));
    }
  }
  out->neutralised = true;
  out->now_at = now_at;
  out->restore = absl::StrJoin(undo, " && ");
  if (f.layout) {
    out->inspect = absl::StrCat("cat ", ShellQuote(now_at + "/config"), "; ls -la ",
                                ShellQuote(now_at + "/hooks"));
  } else {
    out->inspect = absl::StrCat("ls -la ", ShellQuote(now_at), "; cat ", ShellQuote(now_at));
  }
}

}  // namespace

bool IsEditorActedOnName(const std::string& name) {
  static const std::set<std::string>* const kNames = new std::set<std::string>{
      // Editors and IDEs: workspace settings, tasks, launch configurations,
      // recommended extensions, dev containers, per-directory scripts.
      ".vscode", ".idea", ".fleet", ".zed", ".devcontainer", ".devcontainer.json", ".editorconfig",
      ".exrc", ".nvimrc", ".nvim.lua", ".dir-locals.el", ".dir-locals-2.el",
      // Shells and environment managers that act on `cd`.
      ".envrc", ".direnv", ".env", ".flaskenv", ".nvmrc", ".node-version", ".tool-versions",
      ".python-version", ".ruby-version", ".java-version", ".sdkmanrc", ".mise.toml", "mise.toml",
      ".rtx.toml", ".autoenv", ".autoenv.zsh", ".autoenv_leave",
      // Git files in the working tree (attributes select filter and diff
      // drivers; submodule settings; hook managers).
      ".gitattributes", ".gitmodules", ".lfsconfig", ".pre-commit-config.yaml", ".husky"};
  if (kNames->count(name) != 0) return true;
  if (absl::StartsWith(name, ".env.")) return true;
  return absl::EndsWith(name, ".code-workspace") || absl::EndsWith(name, ".sublime-project");
}

std::string QuarantineSuffix(const std::string& session_id) {
  return absl::StrCat(".lazaret-quarantine-", session_id);
}

absl::StatusOr<GitDirSnapshot> TakeGitDirSnapshot(const std::string& session_id,
                                                  std::vector<ScanRoot> roots, bool quarantine,
                                                  const ScanLimits& limits) {
  GitDirSnapshot snap;
  snap.session_id = session_id;
  snap.quarantine = quarantine;
  clock_gettime(CLOCK_REALTIME, &snap.since);
  const int depth = AffordableDepth(limits.max_depth);
  for (ScanRoot& r : roots) {
    struct stat st {};
    // A volume that is a single file holds no repository (and its mode is
    // the developer's to watch); only directories are walked.
    if (lstat(r.path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (r.root_git_protected && lstat(absl::StrCat(r.path, "/.git").c_str(), &st) != 0) {
      r.root_git_protected = false;  // a .git the agent makes there is its own
    }
    r.owner_uid.reset();
    r.owner_gid.reset();
    if (r.hand_back_ownership) {
      if (st.st_uid != 0) r.owner_uid = st.st_uid;
      if (st.st_gid != 0) r.owner_gid = st.st_gid;
    }
    snap.roots.push_back(std::move(r));
  }
  for (size_t i = 0; i < snap.roots.size(); ++i) {
    Walk w(Purpose::kSnapshot, snap.roots[i], snap.since, limits, depth, nullptr);
    LAZ_RETURN_IF_ERROR(w.Run());
    snap.complete = snap.complete && w.complete();
    for (const FoundGitDir& f : w.git_dirs()) snap.prints[{i, f.rel}] = f.print;
  }
  return snap;
}

std::string SerializeSnapshot(const GitDirSnapshot& s) {
  common::v1::WorkspaceSnapshot m;
  m.set_session_id(s.session_id);
  m.set_since_seconds(static_cast<int64_t>(s.since.tv_sec));
  m.set_since_nanos(static_cast<int32_t>(s.since.tv_nsec));
  m.set_quarantine(s.quarantine);
  m.set_complete(s.complete);
  for (const ScanRoot& r : s.roots) {
    common::v1::WorkspaceSnapshot::Root* root = m.add_roots();
    root->set_path(r.path);
    root->set_root_git_protected(r.root_git_protected);
    root->set_hand_back_ownership(r.hand_back_ownership);
    if (r.owner_uid.has_value()) root->set_owner_uid(*r.owner_uid);
    if (r.owner_gid.has_value()) root->set_owner_gid(*r.owner_gid);
  }
  for (const auto& [key, print] : s.prints) {
    common::v1::WorkspaceSnapshot::GitDir* g = m.add_git_dirs();
    g->set_root(static_cast<uint32_t>(key.first));
    g->set_path(key.second);
    g->set_fingerprint(print);
  }
  return m.SerializeAsString();
}

absl::StatusOr<GitDirSnapshot> ParseSnapshot(const std::string& bytes) {
  common::v1::WorkspaceSnapshot m;
  if (!m.ParseFromString(bytes)) return absl::InvalidArgumentError("not a workspace scan snapshot");
  if (m.session_id().empty() || m.since_seconds() <= 0 || m.since_nanos() < 0 ||
      m.since_nanos() >= 1000000000) {
    return absl::InvalidArgumentError("the snapshot has no session or start time");
  }
  GitDirSnapshot s;
  s.session_id = m.session_id();
  s.since.tv_sec = static_cast<time_t>(m.since_seconds());
  s.since.tv_nsec = m.since_nanos();
  s.quarantine = m.quarantine();
  s.complete = m.complete();
  for (const common::v1::WorkspaceSnapshot::Root& r : m.roots()) {
    if (r.path().empty() || r.path()[0] != '/' || r.path().find('\0') != std::string::npos) {
      return absl::InvalidArgumentError("the snapshot names a root that is not an absolute path");
    }
    ScanRoot root{r.path(), r.root_git_protected()};
    root.hand_back_ownership = r.hand_back_ownership();
    if (r.has_owner_uid()) root.owner_uid = static_cast<uid_t>(r.owner_uid());
    if (r.has_owner_gid()) root.owner_gid = static_cast<gid_t>(r.owner_gid());
    s.roots.push_back(std::move(root));
  }
  for (const common::v1::WorkspaceSnapshot::GitDir& g : m.git_dirs()) {
    if (g.root() >= s.roots.size() || g.path().empty() || g.path()[0] == '/' ||
        g.path().find('\0') != std::string::npos) {
      return absl::InvalidArgumentError("the snapshot names a git directory outside its roots");
    }
    s.prints[{g.root(), g.path()}] = g.fingerprint();
  }
  return s;
}

absl::StatusOr<ScanReport> ScanAtSessionEnd(const GitDirSnapshot& snap, const ScanLimits& limits) {
  ScanReport report;
  const int depth = AffordableDepth(limits.max_depth);
  const std::string suffix = QuarantineSuffix(snap.session_id);
  for (size_t i = 0; i < snap.roots.size(); ++i) {
    const ScanRoot& root = snap.roots[i];
    Walk w(Purpose::kEnd, root, snap.since, limits, depth, &report.stripped);
    if (absl::Status s = w.Run(); !s.ok()) {
      report.problems.push_back(
          absl::StrCat(root.path, " could not be checked at all: ", s.message()));
      continue;
    }
    if (w.handed_back() > 0) report.handed_back[OwnerName(root)] += w.handed_back();
    for (auto& p : w.problems()) report.problems.push_back(std::move(p));
    for (auto& e : w.editor_files()) report.editor_files.push_back(std::move(e));

    // Deepest first: a repository inside another's git directory is
    // neutralised before its container is renamed.
    std::vector<FoundGitDir>& found = w.git_dirs();
    std::stable_sort(found.begin(), found.end(), [](const FoundGitDir& a, const FoundGitDir& b) {
      return std::count(a.rel.begin(), a.rel.end(), '/') >
             std::count(b.rel.begin(), b.rel.end(), '/');
    });
    std::vector<PlantedRepository> planted;
    for (const FoundGitDir& f : found) {
      auto it = snap.prints.find({i, f.rel});
      if (it != snap.prints.end() && it->second == f.print) continue;  // untouched
      PlantedRepository p;
      p.path = Join(root.path, f.rel);
      p.kind = absl::StrCat(f.kind, it == snap.prints.end() ? ", created" : ", changed",
                            " in this session");
      if (snap.quarantine) {
        Neutralise(root, f, suffix, &p);
      } else {
        p.inspect = f.layout ? absl::StrCat("cat ", ShellQuote(p.path + "/config"))
                             : absl::StrCat("cat ", ShellQuote(p.path));
      }
      planted.push_back(std::move(p));
    }
    // Directories the walk could not look into: an agent-made one may hide
    // a repository, so it goes aside too (a pre-existing one is reported).
    for (const Unchecked& u : w.unchecked()) {
      const std::string path = Join(root.path, u.rel);
      if (!u.agent_made || !snap.quarantine) {
        report.problems.push_back(absl::StrCat(path,
                                               " was not checked for planted git repositories (",
                                               u.why, "). Do not run git below it before looking"));
        continue;
      }
      absl::StatusOr<DirFd> parent = OpenRel(root.path, Dirname(u.rel));
      absl::StatusOr<std::string> to =
          parent.ok() ? RenameAside(*parent, Basename(u.rel), suffix) : parent.status();
      if (!to.ok()) {
        report.problems.push_back(
            absl::StrCat(path, " was not checked (", u.why, ") and could not be moved aside: ",
                         to.status().message(), ". Do not run git below it before looking"));
        continue;
      }
      report.problems.push_back(
          absl::StrCat(path, " was not checked for planted git repositories (", u.why,
                       "), so it was moved aside to ", Join(root.path, Dirname(u.rel)), "/", *to,
                       ". Do not run git below it before looking; delete it, or move it back"));
    }
    std::reverse(planted.begin(), planted.end());  // outermost first
    for (auto& p : planted) report.repositories.push_back(std::move(p));
  }
  return report;
}

absl::Status StripPrivilegeBits(const std::vector<ScanRoot>& roots, const timespec& since,
                                const ScanLimits& limits, std::vector<std::string>* stripped,
                                std::map<std::string, uint64_t>* handed_back) {
  const int depth = AffordableDepth(limits.max_depth);
  absl::Status status;
  for (const ScanRoot& root : roots) {
    Walk w(Purpose::kStrip, root, since, limits, depth, stripped);
    status.Update(w.Run());
    if (handed_back != nullptr && w.handed_back() > 0) {
      (*handed_back)[OwnerName(root)] += w.handed_back();
    }
  }
  return status;
}

std::vector<std::string> ReportLines(const ScanReport& r) {
  std::vector<std::string> out;
  for (const PlantedRepository& p : r.repositories) {
    if (p.neutralised) {
      out.push_back(absl::StrCat("neutralised a git repository the session planted or changed (",
                                 p.kind, "): ", p.path,
                                 p.now_at != p.path ? absl::StrCat(" -> ", p.now_at) : "",
                                 ". Host git no longer finds it there. Inspect: ", p.inspect,
                                 "  Restore (after inspecting its config and hooks): ", p.restore));
      if (!p.error.empty()) out.push_back(absl::StrCat("  (partly: ", p.error, ")"));
    } else if (!p.error.empty()) {
      out.push_back(absl::StrCat("WARNING: could not neutralise the git repository ", p.path, " (",
                                 p.kind, "): ", p.error,
                                 ". Its config can run commands when you use git there; "
                                 "inspect it before running git there: ",
                                 p.inspect));
    } else {
      out.push_back(
          absl::StrCat("warning: the profile keeps planted repositories "
                       "(keep_planted_repositories = true): ",
                       p.path, " (", p.kind,
                       ") is left as it is. Its config can run commands when you use "
                       "git there; inspect it first: ",
                       p.inspect));
    }
  }
  for (const auto& [owner, n] : r.handed_back) {
    out.push_back(absl::StrCat("gave ", n, n == 1 ? " file" : " files",
                               " the session created or changed (owned by host root or another "
                               "user) back to ",
                               owner, ", the owner of the workspace or volume"));
  }
  if (!r.stripped.empty()) {
    out.push_back(absl::StrCat("removed privilege bits the session set on ", r.stripped.size(),
                               " file", r.stripped.size() == 1 ? "" : "s", ":"));
    for (const auto& s : r.stripped) out.push_back(absl::StrCat("  ", s));
  }
  if (!r.editor_files.empty()) {
    out.push_back(absl::StrCat(
        "the session created or changed ", r.editor_files.size(),
        " file(s) that editors, shells or git act on when you open or enter the folder; look at "
        "them before opening it in an editor or cd-ing there with direnv/mise/nvm:"));
    for (size_t i = 0; i < r.editor_files.size() && i < kMaxEditorFilesShown; ++i) {
      out.push_back(absl::StrCat("  ", r.editor_files[i]));
    }
    if (r.editor_files.size() > kMaxEditorFilesShown) {
      out.push_back(
          absl::StrCat("  ... and ", r.editor_files.size() - kMaxEditorFilesShown, " more"));
    }
  }
  for (const auto& p : r.problems) out.push_back(absl::StrCat("WARNING: ", p));
  return out;
}

}  // namespace lazaret::cli::workspace
