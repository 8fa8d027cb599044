#include "services/sessiond/held/view.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/lazaret/held/display.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"
#include "services/common/workspace/catalogue.h"
#include "services/sessiond/gitshadow/sandbox_paths.h"
#include "services/sessiond/workspace/acted_on.h"
#include "services/sessiond/workspace/walk.h"
#include "services/spawn/subprocess.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::held {
namespace {

namespace pb = ::lazaret::held::v1;
using Unit = pb::SessionViews::Unit;

// Depth of a copied or captured tree (the catalogue's directories are
// shallow; deeper is refused, never followed).
constexpr int kMaxTreeDepth = 64;
// Entries looked at in one capture of a view or one new entry.
constexpr uint64_t kMaxCaptureEntries = 100'000;
// Entries the periodic sweep looks at, and its depth (the workspace scan's,
// as far as the descriptor limit allows: one descriptor per level).
constexpr uint64_t kMaxSweepEntries = 2'000'000;
constexpr int kMaxSweepDepth = 4096;
// A symlink unit pointing at another unit is followed (as paths, never
// through the filesystem) at most this far.
constexpr int kMaxLinkHops = 8;

std::vector<std::string> Components(const std::string& rel) {
  return absl::StrSplit(rel, '/', absl::SkipEmpty());
}

std::string Escaped(const std::string& rel) { return ShowName(rel, /*styled=*/false); }

std::string JoinRel(const std::string& a, const std::string& b) {
  return a.empty() ? b : absl::StrCat(a, "/", b);
}

// The directory holding `rel` below `root`, one component at a time, never
// following a symlink. `own`: a tree that is Lazaret's or the sandbox's (a
// view), where a directory the caller owns but cannot enter gets u+rwx;
// never for the workspace.
absl::StatusOr<fs::DirFd> OpenParent(const fs::DirFd& root, const std::string& rel, bool own) {
  std::vector<std::string> parts = Components(rel);
  if (parts.empty()) return absl::InvalidArgumentError("empty path");
  parts.pop_back();
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, fs::MakeDirsAt(root, "", 0700));
  for (const std::string& p : parts) {
    LAZ_ASSIGN_OR_RETURN(dir, own ? dir.OpenOwnChild(p) : dir.OpenChild(p));
  }
  return dir;
}

std::optional<struct stat> Lstat(const fs::DirFd& dir, const std::string& name) {
  struct stat st {};
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return st;
}

// A regular file of the developer's folder, read without following a
// symlink, without opening anything else, and without changing its mode
// (fs::ReadRegularFileAt adds u+r, which is for Lazaret's own trees).
absl::StatusOr<std::string> ReadHostFile(const fs::DirFd& dir, const std::string& name,
                                         uint64_t max_bytes) {
  fs::UniqueFd path(openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!path.valid()) return ErrnoStatus(absl::StrCat("opening ", name), errno);
  struct stat st {};
  if (fstat(path.get(), &st) != 0) return ErrnoStatus(absl::StrCat("stat ", name), errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(name, " is a ", fs::FileTypeName(st.st_mode)));
  }
  const std::string proc = absl::StrCat("/proc/self/fd/", path.get());
  fs::UniqueFd fd(open(proc.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("reading ", name), errno);
  return fs::ReadAll(fd.get(), max_bytes, name);
}

absl::StatusOr<std::string> ReadLinkAt(const fs::DirFd& dir, const std::string& name) {
  return fs::ReadLinkAt(dir.get(), name, name);
}

pb::SessionViews::Identity IdentityOf(const struct stat& st) {
  pb::SessionViews::Identity id;
  id.set_dev(st.st_dev);
  id.set_ino(st.st_ino);
  id.set_mode(st.st_mode);
  id.set_size(st.st_size);
  id.set_ctime_sec(st.st_ctim.tv_sec);
  id.set_ctime_nsec(st.st_ctim.tv_nsec);
  id.set_uid(st.st_uid);
  id.set_gid(st.st_gid);
  return id;
}

bool SameInode(const pb::SessionViews::Identity& id, const struct stat& st) {
  return id.dev() == st.st_dev && id.ino() == st.st_ino &&
         (id.mode() & S_IFMT) == (st.st_mode & S_IFMT);
}

// Rootful, a copy keeps the host entry's owner, so the sandbox sees what
// the folder has; rootless the caller can give nothing away.
void KeepOwner(const fs::DirFd& dir, const std::string& name, const struct stat& st) {
  if (geteuid() == 0) (void)fchownat(dir.get(), name.c_str(), st.st_uid, st.st_gid,
                                     AT_SYMLINK_NOFOLLOW);
}

struct CopyBudget {
  uint64_t bytes = 0;
  uint64_t entries = 0;
  std::vector<std::string> skipped;  // special files, not copied
};

// Copies the host entry `name` of `src` (a regular file, a symlink or a
// directory tree) to `name` in `dst`: regular files with their permission
// bits less setuid/setgid, symlinks as symlinks, special files skipped.
// ResourceExhausted past kMaxViewUnitBytes or kMaxViewUnitEntries.
absl::Status CopyEntry(const fs::DirFd& src, const fs::DirFd& dst, const std::string& name,
                       const std::string& rel, int depth, CopyBudget* b) {
  if (++b->entries > kMaxViewUnitEntries) {
    return absl::ResourceExhaustedError(absl::StrCat("more than ", kMaxViewUnitEntries, " entries"));
  }
  std::optional<struct stat> st = Lstat(src, name);
  if (!st.has_value()) return ErrnoStatus(absl::StrCat("stat ", rel), errno);
  if (S_ISREG(st->st_mode)) {
    if (static_cast<uint64_t>(st->st_size) > kMaxViewUnitBytes - b->bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("more than ", kMaxViewUnitBytes, " bytes"));
    }
    LAZ_ASSIGN_OR_RETURN(std::string content,
                         ReadHostFile(src, name, kMaxViewUnitBytes - b->bytes));
    b->bytes += content.size();
    LAZ_RETURN_IF_ERROR(fs::WriteNewFileAt(dst, name, content, st->st_mode & 01777));
    KeepOwner(dst, name, *st);
    return absl::OkStatus();
  }
  if (S_ISLNK(st->st_mode)) {
    LAZ_ASSIGN_OR_RETURN(std::string target, ReadLinkAt(src, name));
    if (symlinkat(target.c_str(), dst.get(), name.c_str()) != 0) {
      return ErrnoStatus(absl::StrCat("copying the symlink ", rel), errno);
    }
    KeepOwner(dst, name, *st);
    return absl::OkStatus();
  }
  if (S_ISDIR(st->st_mode)) {
    if (depth >= kMaxTreeDepth) {
      return absl::ResourceExhaustedError(absl::StrCat("deeper than ", kMaxTreeDepth, " levels"));
    }
    LAZ_ASSIGN_OR_RETURN(fs::DirFd from, src.OpenChild(name));
    if (mkdirat(dst.get(), name.c_str(), 0700) != 0) {
      return ErrnoStatus(absl::StrCat("creating ", rel), errno);
    }
    LAZ_ASSIGN_OR_RETURN(fs::DirFd to, dst.OpenChild(name));
    LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(from));
    for (const std::string& n : names) {
      LAZ_RETURN_IF_ERROR(CopyEntry(from, to, n, JoinRel(rel, n), depth + 1, b));
    }
    // The mode last: a 0555 directory must take its entries first.
    if (fchmod(to.get(), st->st_mode & 01777) != 0) {
      return ErrnoStatus(absl::StrCat("chmod ", rel), errno);
    }
    KeepOwner(dst, name, *st);
    return absl::OkStatus();
  }
  b->skipped.push_back(absl::StrCat(rel, " (", fs::FileTypeName(st->st_mode), ")"));
  return absl::OkStatus();
}

// One entry of a view or base tree, for the comparison at the end.
struct TreeEntry {
  mode_t mode = 0;  // st_mode
  int64_t size = 0;
};

// Every entry below (and including) `rel` of the tree `root` (a view or a
// base: Lazaret's own directories or the agent's, so OpenOwnChild), keyed by
// workspace-relative path. False when the walk was cut short (a limit).
bool ListTree(const fs::DirFd& root, const std::string& rel, std::map<std::string, TreeEntry>* out) {
  absl::StatusOr<fs::DirFd> parent = OpenParent(root, rel, /*own=*/true);
  if (!parent.ok()) return true;
  std::optional<struct stat> top = Lstat(*parent, vocab::Basename(rel));
  if (!top.has_value()) return true;
  (*out)[rel] = {top->st_mode, top->st_size};
  if (!S_ISDIR(top->st_mode)) return true;
  struct Level {
    fs::DirFd dir;
    std::string rel;
    int depth;
  };
  std::vector<Level> todo;
  absl::StatusOr<fs::DirFd> first = parent->OpenOwnChild(vocab::Basename(rel));
  if (!first.ok()) return false;
  todo.push_back({*std::move(first), rel, 0});
  bool complete = true;
  while (!todo.empty()) {
    Level l = std::move(todo.back());
    todo.pop_back();
    absl::StatusOr<std::vector<std::string>> names = fs::ListNames(l.dir);
    if (!names.ok()) {
      complete = false;
      continue;
    }
    for (const std::string& n : *names) {
      if (out->size() >= kMaxCaptureEntries) return false;
      std::optional<struct stat> st = Lstat(l.dir, n);
      if (!st.has_value()) continue;
      const std::string r = JoinRel(l.rel, n);
      (*out)[r] = {st->st_mode, st->st_size};
      if (S_ISDIR(st->st_mode)) {
        if (l.depth + 1 >= kMaxTreeDepth) {
          complete = false;
          continue;
        }
        absl::StatusOr<fs::DirFd> child = l.dir.OpenOwnChild(n);
        if (!child.ok()) {
          complete = false;
          continue;
        }
        todo.push_back({*std::move(child), r, l.depth + 1});
      }
    }
  }
  return complete;
}

// What a regular file or symlink at `rel` below `root` holds, for
// comparisons: "f<mode bits>:<bytes>" or "l:<target>". nullopt when it is
// neither (or unreadable: `error` says why).
std::optional<std::string> ContentOf(const fs::DirFd& root, const std::string& rel,
                                     absl::Status* error) {
  absl::StatusOr<fs::DirFd> parent = OpenParent(root, rel, /*own=*/true);
  if (!parent.ok()) {
    *error = parent.status();
    return std::nullopt;
  }
  const std::string name = vocab::Basename(rel);
  std::optional<struct stat> st = Lstat(*parent, name);
  if (!st.has_value()) return std::nullopt;
  if (S_ISLNK(st->st_mode)) {
    absl::StatusOr<std::string> t = ReadLinkAt(*parent, name);
    if (!t.ok()) {
      *error = t.status();
      return std::nullopt;
    }
    return absl::StrCat("l:", *t);
  }
  if (!S_ISREG(st->st_mode)) return std::nullopt;
  absl::StatusOr<std::string> c = fs::ReadRegularFileAt(*parent, name, kMaxHeldFileBytes);
  if (!c.ok()) {
    *error = c.status();
    return std::nullopt;
  }
  // Permission bits as the store keeps them (no setuid, setgid, sticky).
  return absl::StrCat("f", st->st_mode & 0777, ":", *c);
}

timespec NowCoarse() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME_COARSE, &t);
  return t;
}

bool NotBefore(const struct stat& st, const pb::SessionViews& s) {
  if (st.st_ctim.tv_sec != s.since_sec()) return st.st_ctim.tv_sec > s.since_sec();
  return st.st_ctim.tv_nsec >= s.since_nsec();
}

std::string WhyOf(const std::string& rel) {
  std::optional<lazaret::workspace::CatalogueMatch> m = lazaret::workspace::MatchCatalogue(rel);
  if (m.has_value() && m->entry != nullptr) return std::string(m->entry->tools);
  return "named by host configuration";
}

// The Git Shadow owns the workspace's .git (a tmpfs inside, the host's
// read-only): a unit there would poke through it.
bool InGitDir(const std::string& rel) { return rel == ".git" || absl::StartsWith(rel, ".git/"); }

// The workspace path a relative symlink at `rel` names, lexically ("..."
// resolved against its directory); nullopt when it leaves the workspace or
// is absolute (inside the sandbox an absolute target never names the host's
// folder by the same path).
std::optional<std::string> LinkTargetRel(const std::string& rel, const std::string& target) {
  if (target.empty() || target[0] == '/') return std::nullopt;
  std::vector<std::string> parts = Components(vocab::Dirname(rel));
  for (const std::string& p : Components(target)) {
    if (p == ".") continue;
    if (p == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
      continue;
    }
    parts.push_back(p);
  }
  if (parts.empty()) return std::nullopt;
  return absl::StrJoin(parts, "/");
}

}  // namespace

void HeldReport::Add(HeldChange change) {
  for (HeldChange& h : held) {
    if (h.rel == change.rel) {
      // A created file the agent changes again stays created.
      if (!(h.change == Change::kCreated && change.change == Change::kChanged)) {
        h.change = change.change;
      }
      return;
    }
  }
  held.push_back(std::move(change));
}

void HeldReport::Problem(std::string line) {
  if (std::find(problems.begin(), problems.end(), line) == problems.end()) {
    problems.push_back(std::move(line));
  }
}

std::vector<std::string> HeldReportLines(const HeldReport& r) {
  std::vector<std::string> out;
  if (!r.held.empty()) {
    int counts[3] = {0, 0, 0};
    for (const HeldChange& h : r.held) ++counts[static_cast<int>(h.change)];
    out.push_back(absl::StrCat("held for review, not in your folder: ", r.held.size(),
                               r.held.size() == 1 ? " path" : " paths", " (created ", counts[0],
                               ", changed ", counts[1], ", deleted ", counts[2], ")"));
    std::vector<HeldChange> sorted = r.held;
    std::sort(sorted.begin(), sorted.end(),
              [](const HeldChange& a, const HeldChange& b) { return a.rel < b.rel; });
    for (const HeldChange& h : sorted) {
      out.push_back(absl::StrCat("  ", ChangeName(h.change), " ", Escaped(h.rel), " (",
                                 Escaped(h.why), ")"));
    }
    out.push_back(
        "review: lazaret held diff; apply: lazaret held apply PATH; drop: lazaret held drop PATH");
  }
  for (const std::string& p : r.problems) out.push_back(absl::StrCat("held: ", p));
  return out;
}

absl::StatusOr<SessionViews> SessionViews::Build(const ViewRequest& req,
                                                 std::vector<std::string>* notices) {
  SessionViews v;
  v.rootless_ = req.rootless;
  v.quiet_ = req.quiet_before_taking;
  v.held_dir_ = absl::StrCat(req.session_dir, "/", kHeldDirName);
  v.state_.set_session_id(req.session_id);
  v.state_.set_workspace(req.workspace);
  v.state_.set_profile_dir(req.profile_dir);
  const timespec since = NowCoarse();
  v.state_.set_since_sec(since.tv_sec);
  v.state_.set_since_nsec(since.tv_nsec);

  LAZ_ASSIGN_OR_RETURN(Store store, Store::Open(req.profile_dir, req.workspace, /*create=*/true));
  LAZ_ASSIGN_OR_RETURN(std::vector<HeldEntry> held, store.List());
  LAZ_ASSIGN_OR_RETURN(workspace::ActedOnPaths found,
                       workspace::FindActedOnPaths(req.workspace, req.home));
  for (const std::string& p : found.problems) notices->push_back(absl::StrCat("held: ", p));

  LAZ_ASSIGN_OR_RETURN(fs::DirFd session, fs::DirFd::Open(req.session_dir));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd held_dir, fs::MakeDirsAt(session, kHeldDirName, 0700));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd view_root, fs::MakeDirsAt(held_dir, "view", 0700));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd base_root, fs::MakeDirsAt(held_dir, "base", 0700));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd ws, fs::DirFd::Open(req.workspace));
  LAZ_ASSIGN_OR_RETURN(fs::DirFd files, fs::DirFd::Open(store.files_dir()));

  // The units: every acted-on path, then each held entry's outermost
  // catalogue instance (or the held path itself) unless a unit covers it.
  std::map<std::string, std::string> why;  // rel -> who acts on it
  for (const workspace::ActedOnPath& p : found.paths) {
    if (!InGitDir(p.rel)) why.emplace(p.rel, p.why);
  }
  auto covered = [&why](const std::string& rel) {
    for (const auto& [u, w] : why) {
      if (vocab::IsAtOrUnder(rel, u)) return true;
    }
    return false;
  };
  for (const HeldEntry& e : held) {
    if (InGitDir(e.rel) || covered(e.rel)) continue;
    std::optional<lazaret::workspace::CatalogueMatch> m = lazaret::workspace::MatchCatalogue(e.rel);
    if (m.has_value()) {
      why.emplace(m->rel, std::string(m->entry->tools));
    } else {
      why.emplace(e.rel, "held");
    }
  }
  // Outermost only: a unit inside another is the other's.
  auto outermost = [&why] {
    for (auto it = why.begin(); it != why.end();) {
      bool inside = false;
      for (const auto& [u, w] : why) {
        if (u != it->first && vocab::IsAtOrUnder(it->first, u)) inside = true;
      }
      it = inside ? why.erase(it) : std::next(it);
    }
  };
  outermost();

  // Symlink units that point at another path of the workspace: the agent
  // writes through them inside, so their targets are units as well.
  std::vector<std::string> todo;
  for (const auto& [u, w] : why) todo.push_back(u);
  std::map<std::string, int> hops;
  while (!todo.empty()) {
    const std::string rel = todo.back();
    todo.pop_back();
    absl::StatusOr<fs::DirFd> parent = OpenParent(ws, rel, /*own=*/false);
    if (!parent.ok()) continue;
    std::optional<struct stat> st = Lstat(*parent, vocab::Basename(rel));
    if (!st.has_value() || !S_ISLNK(st->st_mode)) continue;
    absl::StatusOr<std::string> target = ReadLinkAt(*parent, vocab::Basename(rel));
    if (!target.ok()) continue;
    std::optional<std::string> t = LinkTargetRel(rel, *target);
    if (!t.has_value() || InGitDir(*t) || covered(*t)) continue;
    if (hops[rel] >= kMaxLinkHops) continue;
    hops[*t] = hops[rel] + 1;
    why.emplace(*t, absl::StrCat("target of ", rel));
    todo.push_back(*t);
  }
  outermost();

  for (const auto& [rel, w] : why) {
    Unit u;
    u.set_rel(rel);
    u.set_why(w);
    std::vector<const HeldEntry*> mine;
    for (const HeldEntry& e : held) {
      if (vocab::IsAtOrUnder(e.rel, rel)) mine.push_back(&e);
    }
    const bool held_inside = std::any_of(mine.begin(), mine.end(),
                                         [&rel](const HeldEntry* e) { return e->rel != rel; });
    absl::StatusOr<fs::DirFd> parent = OpenParent(ws, rel, /*own=*/false);
    if (!parent.ok()) {
      if (!mine.empty()) {
        notices->push_back(absl::StrCat("held: ", Escaped(rel),
                                        " is not shown in this session: its directory is not "
                                        "in your folder (",
                                        parent.status().message(), ")"));
      }
      continue;
    }
    const std::string name = vocab::Basename(rel);
    std::optional<struct stat> st = Lstat(*parent, name);
    if (!st.has_value() && errno != ENOENT) {
      return ErrnoStatus(absl::StrCat("stat ", rel), errno);
    }
    if (rel.find(':') != std::string::npos) {
      // podman's -v cannot carry it. Yours: no session without containment.
      // Only held (the agent named it): not shown, and watched.
      if (st.has_value()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the workspace path ", Escaped(rel), " (", w,
            ") must be held in a view, and podman cannot mount a path with ':'; rename it"));
      }
      notices->push_back(absl::StrCat("held: ", Escaped(rel),
                                      " is not shown in this session (podman cannot mount a "
                                      "path with ':')"));
      mine.clear();
    }
    if (!st.has_value() && mine.empty()) {
      // Named by git config, missing, nothing held: a created one is held.
      u.set_mode(pb::SessionViews::MODE_ABSENT);
      v.state_.add_units()->Swap(&u);
      continue;
    }
    if (st.has_value() && !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
      // A bind destination that is a symlink would be followed: watched.
      u.set_mode(pb::SessionViews::MODE_WATCHED);
      *u.mutable_host() = IdentityOf(*st);
      if (S_ISLNK(st->st_mode)) {
        LAZ_ASSIGN_OR_RETURN(fs::DirFd bp, fs::MakeOwnDirsAt(base_root, vocab::Dirname(rel), 0700));
        CopyBudget b;
        LAZ_RETURN_IF_ERROR(CopyEntry(*parent, bp, name, rel, 0, &b));
      }
      if (!mine.empty()) {
        notices->push_back(absl::StrCat("held: ", Escaped(rel),
                                        " is not shown in this session: your folder has a ",
                                        fs::FileTypeName(st->st_mode), " there"));
      }
      v.state_.add_units()->Swap(&u);
      continue;
    }
    const bool directory = st.has_value() ? S_ISDIR(st->st_mode) : held_inside;
    if (st.has_value() && !directory && held_inside) {
      notices->push_back(absl::StrCat("held: the files held below ", Escaped(rel),
                                      " are not shown in this session: your folder has a file "
                                      "there"));
      mine.clear();
    }
    u.set_directory(directory);
    LAZ_ASSIGN_OR_RETURN(fs::DirFd vp, fs::MakeOwnDirsAt(view_root, vocab::Dirname(rel), 0700));
    LAZ_ASSIGN_OR_RETURN(fs::DirFd bp, fs::MakeOwnDirsAt(base_root, vocab::Dirname(rel), 0700));
    if (st.has_value()) {
      CopyBudget b;
      absl::Status copied = CopyEntry(*parent, bp, name, rel, 0, &b);
      if (copied.ok()) {
        CopyBudget b2;
        copied = CopyEntry(*parent, vp, name, rel, 0, &b2);
      }
      if (!copied.ok()) {
        (void)fs::RemoveTreeAt(bp, name);
        (void)fs::RemoveTreeAt(vp, name);
        // Too large (or unreadable) to copy: contained (read-only), not viewed.
        u.set_mode(pb::SessionViews::MODE_HOST_READ_ONLY);
        notices->push_back(absl::StrCat(
            "held: ", Escaped(rel), " (", w, ") is read-only in this session: ",
            copied.code() == absl::StatusCode::kResourceExhausted
                ? absl::StrCat(copied.message(), " are too many to copy into a view")
                : absl::StrCat("it could not be copied into a view (", copied.message(), ")")));
        v.state_.add_units()->Swap(&u);
        continue;
      }
      for (const std::string& s : b.skipped) {
        notices->push_back(absl::StrCat("held: ", Escaped(s), " is not shown in this session"));
      }
    } else if (directory) {
      if (mkdirat(vp.get(), name.c_str(), 0755) != 0) {
        return ErrnoStatus(absl::StrCat("creating the view of ", rel), errno);
      }
    }
    // The held versions on top, in the view only.
    for (const HeldEntry* e : mine) {
      absl::StatusOr<fs::DirFd> to = fs::MakeOwnDirsAt(view_root, vocab::Dirname(e->rel), 0755);
      absl::Status shown = to.status();
      const std::string en = vocab::Basename(e->rel);
      if (to.ok()) {
        shown = fs::RemoveTreeAt(*to, en);
        if (shown.ok() && e->kind == "file") {
          absl::StatusOr<fs::DirFd> from = OpenParent(files, e->rel, /*own=*/true);
          shown = from.status();
          if (from.ok()) {
            std::optional<struct stat> hs = Lstat(*from, en);
            shown = fs::CopyRegularFileAt(*from, en, *to, en, kMaxHeldFileBytes,
                                          hs.has_value() ? (hs->st_mode & 0777) : 0644)
                        .status();
          }
        } else if (shown.ok() && e->kind == "symlink") {
          absl::StatusOr<fs::DirFd> from = OpenParent(files, e->rel, /*own=*/true);
          absl::StatusOr<std::string> target =
              from.ok() ? ReadLinkAt(*from, en) : absl::StatusOr<std::string>(from.status());
          shown = target.status();
          if (target.ok() && symlinkat(target->c_str(), to->get(), en.c_str()) != 0) {
            shown = ErrnoStatus("creating the symlink", errno);
          }
        }
      }
      if (!shown.ok()) {
        notices->push_back(absl::StrCat("held: ", Escaped(e->rel),
                                        " is not shown in this session (", shown.message(), ")"));
      }
    }
    if (!st.has_value()) {
      std::optional<struct stat> vs = Lstat(vp, name);
      if (!vs.has_value()) continue;  // a held deletion of a file the folder does not have
      u.set_placeholder(true);
      u.set_directory(S_ISDIR(vs->st_mode));
    }
    u.set_mode(pb::SessionViews::MODE_VIEW);
    v.state_.add_units()->Swap(&u);
  }
  for (const Unit& u : v.state_.units()) v.unit_rels_.insert(u.rel());
  v.store_.emplace(std::move(store));

  // Recorded before the first placeholder exists, so that a reap knows it.
  LAZ_RETURN_IF_ERROR(v.WriteUnits());
  for (Unit& u : *v.state_.mutable_units()) {
    if (!u.placeholder()) continue;
    absl::StatusOr<fs::DirFd> parent = OpenParent(ws, u.rel(), /*own=*/false);
    const std::string name = vocab::Basename(u.rel());
    int rc = -1;
    if (parent.ok()) {
      if (u.directory()) {
        rc = mkdirat(parent->get(), name.c_str(), 0);
      } else {
        fs::UniqueFd fd(openat(parent->get(), name.c_str(),
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0));
        rc = fd.valid() ? 0 : -1;
      }
    }
    std::optional<struct stat> st;
    if (rc == 0) st = Lstat(*parent, name);
    if (!st.has_value()) {
      // Not shown: the sandbox would otherwise see a mount point podman
      // makes itself, in the developer's folder.
      const int err = errno;
      notices->push_back(absl::StrCat("held: ", Escaped(u.rel()),
                                      " is not shown in this session (its mount point could not "
                                      "be made: ",
                                      parent.ok() ? strerror(err) : parent.status().message(), ")"));
      // Watched instead: one the agent creates there is held and removed.
      u.set_placeholder(false);
      u.set_mode(pb::SessionViews::MODE_ABSENT);
      continue;
    }
    *u.mutable_host() = IdentityOf(*st);
  }
  LAZ_RETURN_IF_ERROR(v.WriteUnits());
  return v;
}

absl::StatusOr<SessionViews> SessionViews::Load(const std::string& session_dir, bool rootless) {
  SessionViews v;
  v.rootless_ = rootless;
  v.held_dir_ = absl::StrCat(session_dir, "/", kHeldDirName);
  absl::StatusOr<fs::DirFd> dir = fs::DirFd::Open(v.held_dir_);
  if (!dir.ok()) return absl::NotFoundError("the session recorded no views");
  absl::StatusOr<std::string> bytes = fs::ReadRegularFileAt(*dir, kUnitsFileName, 64ull << 20);
  if (!bytes.ok()) return absl::NotFoundError("the session recorded no views");
  if (!v.state_.ParseFromString(*bytes)) {
    return absl::DataLossError(absl::StrCat(v.held_dir_, "/", kUnitsFileName, " is unreadable"));
  }
  if (!vocab::IsCleanAbsolutePath(v.state_.workspace()) ||
      !vocab::IsCleanAbsolutePath(v.state_.profile_dir())) {
    return absl::DataLossError(absl::StrCat(v.held_dir_, "/", kUnitsFileName,
                                            " names no clean workspace or profile directory"));
  }
  for (const Unit& u : v.state_.units()) {
    LAZ_RETURN_IF_ERROR(CheckHeldRel(u.rel()));
    v.unit_rels_.insert(u.rel());
  }
  LAZ_ASSIGN_OR_RETURN(Store store,
                       Store::Open(v.state_.profile_dir(), v.state_.workspace(), /*create=*/true));
  v.store_.emplace(std::move(store));
  return v;
}

absl::Status SessionViews::WriteUnits() const {
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, fs::DirFd::Open(held_dir_));
  return fs::WriteFileAtomicAt(dir, kUnitsFileName, state_.SerializeAsString(), 0600);
}

std::vector<BindMount> SessionViews::Mounts() const {
  std::vector<BindMount> out;
  for (const Unit& u : state_.units()) {
    const std::string inside = absl::StrCat(gitshadow::kSandboxWorkspace, "/", u.rel());
    if (u.mode() == pb::SessionViews::MODE_VIEW) {
      out.push_back(BindMount{absl::StrCat(held_dir_, "/view/", u.rel()), inside,
                              /*read_only=*/false, /*selinux_shared=*/false});
    } else if (u.mode() == pb::SessionViews::MODE_HOST_READ_ONLY) {
      out.push_back(BindMount{absl::StrCat(state_.workspace(), "/", u.rel()), inside,
                              /*read_only=*/true, /*selinux_shared=*/false});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const BindMount& a, const BindMount& b) { return a.container < b.container; });
  return out;
}

bool SessionViews::IsUnitOrInside(const std::string& rel) const {
  for (const std::string& u : unit_rels_) {
    if (vocab::IsAtOrUnder(rel, u)) return true;
  }
  return false;
}

namespace {

bool WrittenWithin(const struct stat& st, std::chrono::milliseconds window) {
  const auto changed = std::chrono::system_clock::time_point(
      std::chrono::seconds(st.st_ctim.tv_sec) + std::chrono::nanoseconds(st.st_ctim.tv_nsec));
  return std::chrono::system_clock::now() - changed < window;
}

}  // namespace

void SessionViews::HoldAndRemove(const std::string& rel, const std::string& why) {
  absl::StatusOr<fs::DirFd> ws = fs::DirFd::Open(state_.workspace());
  if (!ws.ok()) return;
  absl::StatusOr<fs::DirFd> parent = OpenParent(*ws, rel, /*own=*/false);
  if (!parent.ok()) return;
  // Depth-first, one directory descriptor per level; files are held and
  // unlinked only while the name still refers to the inode that was held.
  uint64_t entries = 0;
  std::function<void(const fs::DirFd&, const std::string&, int)> entry =
      [&](const fs::DirFd& dir, const std::string& r, int depth) {
        const std::string name = vocab::Basename(r);
        std::optional<struct stat> st = Lstat(dir, name);
        if (!st.has_value()) return;
        if (++entries > kMaxCaptureEntries || depth > kMaxTreeDepth) {
          report_.Problem(absl::StrCat("not all of ", Escaped(rel),
                                       " could be held and removed (too many entries); remove "
                                       "it from your folder before opening it"));
          return;
        }
        if (S_ISDIR(st->st_mode)) {
          absl::StatusOr<fs::DirFd> child = dir.OpenOwnChild(name);
          if (!child.ok()) {
            report_.Problem(absl::StrCat("could not hold ", Escaped(r), ": ",
                                         child.status().message(),
                                         "; it is still in your folder, remove it"));
            return;
          }
          absl::StatusOr<std::vector<std::string>> names = fs::ListNames(*child);
          if (names.ok()) {
            for (const std::string& n : *names) entry(*child, JoinRel(r, n), depth + 1);
          }
          if (unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT &&
              errno != ENOTEMPTY) {
            report_.Problem(absl::StrCat("could not remove ", Escaped(r), ": ", strerror(errno)));
          }
          return;
        }
        if (!final_pass_ && WrittenWithin(*st, quiet_)) {
          // Still being written: taken by a later pass (at the latest the
          // end's), so the agent's write is held whole.
          return;
        }
        if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) {
          absl::Status h = store_->Hold(*ws, r, Change::kCreated, state_.session_id());
          if (h.ok()) {
            report_.Add({r, Change::kCreated, why});
          } else {
            report_.Problem(absl::StrCat("could not hold ", Escaped(r), ": ", h.message(),
                                         "; it was removed from your folder"));
          }
        } else {
          report_.Problem(absl::StrCat("removed ", Escaped(r), " (a ",
                                       fs::FileTypeName(st->st_mode), ") from your folder"));
        }
        std::optional<struct stat> now = Lstat(dir, name);
        if (now.has_value() && now->st_dev == st->st_dev && now->st_ino == st->st_ino &&
            now->st_ctim.tv_sec == st->st_ctim.tv_sec &&
            now->st_ctim.tv_nsec == st->st_ctim.tv_nsec) {
          if (unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
            report_.Problem(absl::StrCat("could not remove ", Escaped(r), " from your folder: ",
                                         strerror(errno), "; remove it before opening the folder"));
          }
        }
        // Changed between look and act: left for the next pass.
      };
  entry(*parent, rel, 0);
}

void SessionViews::CheckWatched(const Unit& u) {
  absl::StatusOr<fs::DirFd> ws = fs::DirFd::Open(state_.workspace());
  if (!ws.ok()) return;
  absl::StatusOr<fs::DirFd> parent = OpenParent(*ws, u.rel(), /*own=*/false);
  if (!parent.ok()) return;
  const std::string name = vocab::Basename(u.rel());
  std::optional<struct stat> st = Lstat(*parent, name);
  if (u.mode() == pb::SessionViews::MODE_ABSENT) {
    if (st.has_value()) HoldAndRemove(u.rel(), u.why());
    return;
  }
  // MODE_WATCHED: the developer's symlink (or special file). Unchanged is
  // the same target text (a symlink) or the same inode (anything else).
  const bool was_link = S_ISLNK(u.host().mode());
  std::optional<std::string> base_target;
  if (was_link) {
    absl::StatusOr<fs::DirFd> base = fs::DirFd::Open(absl::StrCat(held_dir_, "/base"));
    if (base.ok()) {
      absl::StatusOr<fs::DirFd> bp = OpenParent(*base, u.rel(), /*own=*/true);
      if (bp.ok()) {
        absl::StatusOr<std::string> t = ReadLinkAt(*bp, name);
        if (t.ok()) base_target = *t;
      }
    }
  }
  if (st.has_value()) {
    if (was_link && S_ISLNK(st->st_mode) && base_target.has_value()) {
      absl::StatusOr<std::string> now = ReadLinkAt(*parent, name);
      if (now.ok() && *now == *base_target) return;
    } else if (!was_link && SameInode(u.host(), *st)) {
      return;
    }
  }
  if (st.has_value()) {
    if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) {
      absl::Status h = store_->Hold(*ws, u.rel(), Change::kChanged, state_.session_id());
      if (h.ok()) {
        report_.Add({u.rel(), Change::kChanged, u.why()});
      } else {
        report_.Problem(absl::StrCat("could not hold ", Escaped(u.rel()), ": ", h.message()));
      }
      if (unlinkat(parent->get(), name.c_str(), 0) != 0 && errno != ENOENT) return;
    } else {
      HoldAndRemove(u.rel(), u.why());
      if (Lstat(*parent, name).has_value()) return;
    }
  } else {
    absl::Status h = store_->HoldDeletion(u.rel(), state_.session_id());
    if (h.ok()) report_.Add({u.rel(), Change::kDeleted, u.why()});
  }
  // The developer's version back.
  if (base_target.has_value() &&
      symlinkat(base_target->c_str(), parent->get(), name.c_str()) == 0) {
    if (geteuid() == 0) {
      (void)fchownat(parent->get(), name.c_str(), u.host().uid(), u.host().gid(),
                     AT_SYMLINK_NOFOLLOW);
    }
    return;
  }
  report_.Problem(absl::StrCat("the ", fs::FileTypeName(u.host().mode()), " ", Escaped(u.rel()),
                               " in your folder was replaced by the session and could not be "
                               "restored"));
}

void SessionViews::CaptureView(const Unit& u) {
  absl::StatusOr<fs::DirFd> view = fs::DirFd::Open(absl::StrCat(held_dir_, "/view"));
  absl::StatusOr<fs::DirFd> base = fs::DirFd::Open(absl::StrCat(held_dir_, "/base"));
  absl::StatusOr<fs::DirFd> files = fs::DirFd::Open(store_->files_dir());
  if (!view.ok() || !base.ok() || !files.ok()) {
    report_.Problem(absl::StrCat("the view of ", Escaped(u.rel()), " is gone; nothing was held"));
    return;
  }
  std::map<std::string, TreeEntry> v, b;
  if (!ListTree(*view, u.rel(), &v)) {
    report_.Problem(absl::StrCat("not all of ", Escaped(u.rel()),
                                 " could be read in the session's view; what was not read is "
                                 "not held (the host folder was not changed)"));
  }
  ListTree(*base, u.rel(), &b);
  std::map<std::string, HeldEntry> held;
  if (absl::StatusOr<std::vector<HeldEntry>> all = store_->List(); all.ok()) {
    for (HeldEntry& e : *all) {
      if (vocab::IsAtOrUnder(e.rel, u.rel())) held.emplace(e.rel, std::move(e));
    }
  }
  auto is_file = [](const std::map<std::string, TreeEntry>& m, const std::string& r) {
    auto it = m.find(r);
    return it != m.end() && (S_ISREG(it->second.mode) || S_ISLNK(it->second.mode));
  };
  std::set<std::string> rels;
  for (const auto& [r, e] : v) rels.insert(r);
  for (const auto& [r, e] : b) rels.insert(r);
  for (const auto& [r, e] : held) rels.insert(r);
  for (const std::string& r : rels) {
    auto hit = held.find(r);
    const HeldEntry* h = hit == held.end() ? nullptr : &hit->second;
    auto vit = v.find(r);
    if (vit != v.end() && !is_file(v, r) && !S_ISDIR(vit->second.mode)) {
      report_.Problem(absl::StrCat("not held: ", Escaped(r), " is a ",
                                   fs::FileTypeName(vit->second.mode)));
      continue;
    }
    if (is_file(v, r)) {
      absl::Status verr, berr, herr;
      std::optional<std::string> vc = ContentOf(*view, r, &verr);
      if (!verr.ok()) {
        report_.Problem(absl::StrCat("could not hold ", Escaped(r), ": ", verr.message(),
                                     "; the host folder was not changed"));
        continue;
      }
      std::optional<std::string> bc = is_file(b, r) ? ContentOf(*base, r, &berr) : std::nullopt;
      if (vc.has_value() && bc.has_value() && *vc == *bc) {
        if (h != nullptr) (void)store_->Drop(r);  // back to the folder's version
        continue;
      }
      if (h != nullptr && h->kind != "deleted") {
        std::optional<std::string> hc = ContentOf(*files, r, &herr);
        if (hc.has_value() && vc.has_value() && *hc == *vc) continue;  // held already
      }
      const Change change = is_file(b, r) || b.count(r) != 0 ? Change::kChanged : Change::kCreated;
      absl::Status s = store_->Hold(*view, r, change, state_.session_id());
      if (s.ok()) {
        report_.Add({r, change, u.why()});
      } else {
        report_.Problem(absl::StrCat("could not hold ", Escaped(r), ": ", s.message(),
                                     "; the host folder was not changed"));
      }
      continue;
    }
    // Nothing (or a directory) at r in the view.
    if (is_file(b, r)) {
      if (h != nullptr && h->change == Change::kDeleted) continue;
      absl::Status s = store_->HoldDeletion(r, state_.session_id());
      if (s.ok()) {
        report_.Add({r, Change::kDeleted, u.why()});
      } else {
        report_.Problem(absl::StrCat("could not hold the deletion of ", Escaped(r), ": ",
                                     s.message()));
      }
    } else if (h != nullptr && vit == v.end()) {
      // The agent removed what an earlier session created: nothing left to hold.
      (void)store_->Drop(r);
    }
  }
  // A file of yours with more than one name: the agent can write it through
  // another name outside the view. Never silently.
  absl::StatusOr<fs::DirFd> ws = fs::DirFd::Open(state_.workspace());
  if (!ws.ok()) return;
  for (const auto& [r, e] : b) {
    if (!S_ISREG(e.mode)) continue;
    absl::StatusOr<fs::DirFd> hp = OpenParent(*ws, r, /*own=*/false);
    if (!hp.ok()) continue;
    std::optional<struct stat> st = Lstat(*hp, vocab::Basename(r));
    if (!st.has_value() || !S_ISREG(st->st_mode) || st->st_nlink < 2) continue;
    absl::StatusOr<std::string> now = ReadHostFile(*hp, vocab::Basename(r), kMaxViewUnitBytes);
    absl::StatusOr<fs::DirFd> bp = OpenParent(*base, r, /*own=*/true);
    absl::StatusOr<std::string> then =
        bp.ok() ? fs::ReadRegularFileAt(*bp, vocab::Basename(r), kMaxViewUnitBytes)
                : absl::StatusOr<std::string>(bp.status());
    if (!now.ok() || !then.ok() || *now != *then) {
      report_.Problem(absl::StrCat("WARNING: ", Escaped(r), " has ", st->st_nlink,
                                   " hard links and changed in your folder during the session "
                                   "(written through another of its names); look at it before "
                                   "opening the folder"));
    }
  }
}

void SessionViews::RemovePlaceholder(const Unit& u) {
  if (!u.placeholder()) return;
  absl::StatusOr<fs::DirFd> ws = fs::DirFd::Open(state_.workspace());
  if (!ws.ok()) return;
  absl::StatusOr<fs::DirFd> parent = OpenParent(*ws, u.rel(), /*own=*/false);
  if (!parent.ok()) return;
  const std::string name = vocab::Basename(u.rel());
  std::optional<struct stat> st = Lstat(*parent, name);
  if (!st.has_value()) return;
  // Ours: the inode made (or, recorded before it was made, a mode-0 entry),
  // and still empty.
  const bool ours = u.host().ino() != 0 ? SameInode(u.host(), *st)
                                        : (st->st_mode & 07777) == 0;
  if (!ours) return;
  if (S_ISREG(st->st_mode) && st->st_size == 0) {
    (void)unlinkat(parent->get(), name.c_str(), 0);
  } else if (S_ISDIR(st->st_mode)) {
    (void)unlinkat(parent->get(), name.c_str(), AT_REMOVEDIR);  // only when empty
  }
}

void SessionViews::Tick() {
  if (!store_.has_value()) return;
  absl::StatusOr<fs::DirFd> ws = fs::DirFd::Open(state_.workspace());
  if (!ws.ok()) return;
  absl::StatusOr<std::vector<std::string>> names = fs::ListNames(*ws);
  if (names.ok()) {
    for (const std::string& n : *names) {
      if (n == ".git" || IsUnitOrInside(n)) continue;
      std::optional<lazaret::workspace::CatalogueMatch> m = lazaret::workspace::MatchCatalogue(n);
      if (!m.has_value() || m->rel != n) continue;
      if (ChangedInSession(*ws, n)) HoldAndRemove(n, WhyOf(n));
    }
  }
  // The root-only paths of more than one component (.github/copilot-instructions.md).
  for (const lazaret::workspace::CatalogueEntry& e : lazaret::workspace::Catalogue()) {
    if (e.where != lazaret::workspace::Where::kWorkspaceRoot) continue;
    const std::string rel(e.path);
    if (rel.find('/') == std::string::npos || InGitDir(rel) || IsUnitOrInside(rel)) continue;
    if (ChangedInSession(*ws, rel)) HoldAndRemove(rel, std::string(e.tools));
  }
  for (const Unit& u : state_.units()) {
    if (u.mode() == pb::SessionViews::MODE_WATCHED || u.mode() == pb::SessionViews::MODE_ABSENT) {
      CheckWatched(u);
    }
  }
}

bool SessionViews::ChangedInSession(const fs::DirFd& ws, const std::string& rel) const {
  absl::StatusOr<fs::DirFd> dir = OpenParent(ws, rel, /*own=*/false);
  if (!dir.ok()) return false;
  std::optional<struct stat> st = Lstat(*dir, vocab::Basename(rel));
  if (!st.has_value()) return false;
  if (NotBefore(*st, state_)) return true;
  // A directory renamed into place carries entries whose own ctime is old.
  absl::StatusOr<fs::DirFd> at = fs::MakeDirsAt(ws, "", 0700);
  if (!at.ok()) return false;
  std::vector<std::string> parts = Components(rel);
  parts.pop_back();
  for (const std::string& p : parts) {
    std::optional<struct stat> ps = Lstat(*at, p);
    if (!ps.has_value()) return false;
    if (NotBefore(*ps, state_)) return true;
    absl::StatusOr<fs::DirFd> next = at->OpenChild(p);
    if (!next.ok()) return false;
    at = std::move(next);
  }
  return false;
}

void SessionViews::SweepDir(const fs::DirFd& dir, const std::string& rel, int depth,
                            int max_depth, bool fresh_above, uint64_t* entries) {
  absl::StatusOr<std::vector<std::string>> names = fs::ListNames(dir);
  if (!names.ok()) return;
  for (const std::string& n : *names) {
    if (++*entries > kMaxSweepEntries) return;
    const std::string r = JoinRel(rel, n);
    if ((depth == 0 && n == ".git") || IsUnitOrInside(r)) continue;
    std::optional<struct stat> st = Lstat(dir, n);
    if (!st.has_value()) continue;
    const bool fresh = fresh_above || NotBefore(*st, state_);
    std::optional<lazaret::workspace::CatalogueMatch> m = lazaret::workspace::MatchCatalogue(r);
    if (m.has_value() && m->rel == r) {
      // One older than the session, in a directory older than it, is the
      // developer's, left alone.
      if (fresh) HoldAndRemove(r, WhyOf(r));
      continue;
    }
    if (!S_ISDIR(st->st_mode)) continue;
    if (depth + 1 >= max_depth) {
      report_.Problem(absl::StrCat("the workspace is deeper than ", max_depth,
                                   " levels below ", Escaped(rel),
                                   "; files editors, shells or agents act on there were not "
                                   "looked for"));
      continue;
    }
    absl::StatusOr<fs::DirFd> child = dir.OpenChild(n);
    if (child.ok()) SweepDir(*child, r, depth + 1, max_depth, fresh, entries);
  }
}

void SessionViews::Sweep() {
  if (!store_.has_value()) return;
  Tick();
  absl::StatusOr<fs::DirFd> ws = fs::DirFd::Open(state_.workspace());
  if (!ws.ok()) return;
  uint64_t entries = 0;
  SweepDir(*ws, "", 0, workspace::AffordableDepth(kMaxSweepDepth), /*fresh_above=*/false,
           &entries);
}

HeldReport SessionViews::End() {
  final_pass_ = true;
  if (store_.has_value()) {
    for (const Unit& u : state_.units()) {
      if (u.mode() == pb::SessionViews::MODE_VIEW) CaptureView(u);
    }
    Sweep();
    for (const Unit& u : state_.units()) RemovePlaceholder(u);
  }
  if (absl::Status s = fs::RemoveTree(held_dir_); !s.ok()) {
    // Rootless, what the agent gave to another uid inside belongs to a
    // subordinate uid here: only the user namespace can remove it.
    bool removed = false;
    if (rootless_) {
      absl::StatusOr<Captured> r =
          RunCaptured({"podman", "unshare", "rm", "-rf", "--", held_dir_}, std::chrono::seconds(60));
      removed = r.ok() && r->exit_code == 0;
    }
    if (!removed) {
      report_.Problem(absl::StrCat("could not remove the session's views ", held_dir_, ": ",
                                   s.message()));
    }
  }
  return report_;
}

}  // namespace lazaret::cli::held
