#include "services/sessiond/workspace/walk.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/sessiond/workspace/ownership.h"
#include "services/sessiond/workspace/privileges.h"
#include "services/common/fs/dir.h"
#include "services/common/status_util.h"
#include "services/common/workspace/catalogue.h"

namespace lazaret::cli::workspace {

using fs::DirFd;
using fs::ListNames;

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

bool SymlinkLeavesTree(const DirFd& root, const std::string& link_rel, const std::string& target) {
  if (target.empty()) return false;
  if (target[0] == '/') return true;
  constexpr int kMaxSymlinks = 40;  // the kernel's own limit (MAXSYMLINKS)
  constexpr int kMaxComponents = 4096;
  std::vector<std::string> at = absl::StrSplit(link_rel, '/', absl::SkipEmpty());
  if (!at.empty()) at.pop_back();  // the link's directory
  std::deque<std::string> pending;
  for (absl::string_view c : absl::StrSplit(target, '/', absl::SkipEmpty())) {
    pending.emplace_back(c);
  }
  int symlinks = 0;
  int components = 0;
  bool lexical = false;  // lookups ended: judge the rest by the names
  while (!pending.empty()) {
    if (++components > kMaxComponents) return true;
    std::string c = std::move(pending.front());
    pending.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      if (at.empty()) return true;
      at.pop_back();
      continue;
    }
    at.push_back(std::move(c));
    if (lexical) continue;
    fs::OpenedBeneath o = fs::OpenBeneath(root.get(), absl::StrJoin(at, "/"), O_PATH | O_NOFOLLOW,
                                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
    struct stat st {};
    if (!o.fd.valid() || fstat(o.fd.get(), &st) != 0) {
      lexical = true;
      continue;
    }
    if (!S_ISLNK(st.st_mode)) continue;
    if (++symlinks > kMaxSymlinks) {
      lexical = true;
      continue;
    }
    char buf[PATH_MAX];
    const ssize_t n = readlinkat(o.fd.get(), "", buf, sizeof buf);
    if (n <= 0) {
      lexical = true;
      continue;
    }
    const std::string next(buf, static_cast<size_t>(n));
    if (next[0] == '/') return true;
    at.pop_back();  // the symlink is replaced by what it points to
    std::vector<absl::string_view> parts = absl::StrSplit(next, '/', absl::SkipEmpty());
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.emplace_front(*it);
  }
  return false;
}

absl::Status Walk::Run() {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root_.path));
  root_dir_ = &dir;
  if (Strips() && HandsBackOwnership(root_)) {
    // The root itself: the agent can chown /workspace too.
    struct stat st {};
    if (fstat(dir.get(), &st) == 0 && NotBefore(st.st_ctim, since_) && NotTheOwners(root_, st) &&
        GiveBack(root_, dir.get(), root_.path, &st, stripped_, &problems_)) {
      ++handed_back_;
    }
  }
  (void)Dir(dir, "", 0, false);
  root_dir_ = nullptr;
  return absl::OkStatus();
}

bool Walk::Dir(const DirFd& dir, const std::string& rel, int depth, bool in_protected_git) {
  absl::StatusOr<std::vector<std::string>> names = ListNames(dir);
  if (!names.ok()) {
    complete_ = false;
    problems_.push_back(absl::StrCat(Join(root_.path, rel), ": could not be listed (",
                                     names.status().message(), "); not checked"));
    return true;
  }
  if (FindsGitDirs() && !in_protected_git) {
    if (std::optional<FoundGitDir> f = GitLayoutAt(dir, rel)) git_dirs_.push_back(*std::move(f));
  }
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
      git_dirs_.push_back(GitFileAt(dir, crel, st));
    }
    if (Strips()) {
      if (MaybeGiveBack(root_, since_, dir, name, crel, &st, stripped_, &problems_)) {
        ++handed_back_;
      }
      StripEntry(root_, since_, dir, name, crel, st, stripped_, &problems_);
    }
    if (S_ISDIR(st.st_mode)) {
      // The snapshot does not need the Git Shadow's own repository; the
      // strip does (the agent writes its objects and refs).
      if (protected_git && purpose_ == Purpose::kSnapshot) continue;
      if (depth + 1 >= max_depth_) {
        complete_ = false;
        unchecked_.push_back({crel, absl::StrCat("deeper than ", max_depth_, " levels"), changed});
        changed = true;
      } else if (absl::StatusOr<DirFd> child = dir.OpenChild(name); child.ok()) {
        changed = Dir(*child, crel, depth + 1, in_protected_git || protected_git) || changed;
      } else {
        complete_ = false;
        unchecked_.push_back({crel, std::string(child.status().message()), changed});
        changed = true;
      }
    }
    if (purpose_ == Purpose::kEnd && changed && !in_protected_git && !protected_git) {
      // The outermost catalogue instance only: a file inside .vscode/ is
      // reported as .vscode/. A file entry's name on a directory (a
      // virtualenv called .env) is not that file.
      std::optional<lazaret::workspace::CatalogueMatch> m =
          lazaret::workspace::MatchCatalogue(crel);
      if (m.has_value() && m->rel == crel && (m->entry->directory || !S_ISDIR(st.st_mode))) {
        acted_on_files_.push_back(
            {absl::StrCat(Join(root_.path, crel), S_ISDIR(st.st_mode) ? "/" : ""),
             std::string(m->entry->tools)});
      }
    }
    if (purpose_ == Purpose::kEnd && S_ISLNK(st.st_mode) && NotBefore(st.st_ctim, since_) &&
        !in_protected_git && root_dir_ != nullptr) {
      char buf[PATH_MAX];
      const ssize_t n = readlinkat(dir.get(), name.c_str(), buf, sizeof buf);
      if (n > 0) {
        std::string target(buf, static_cast<size_t>(n));
        if (SymlinkLeavesTree(*root_dir_, crel, target)) {
          outward_symlinks_.push_back({Join(root_.path, crel), std::move(target)});
        }
      }
    }
    any = any || changed;
  }
  return any;
}

}  // namespace lazaret::cli::workspace
