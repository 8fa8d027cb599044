#include "clients/lazaret/workspace/walk.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "clients/lazaret/workspace/ownership.h"
#include "clients/lazaret/workspace/privileges.h"
#include "services/common/fs/dir.h"
#include "services/common/status_util.h"
#include "services/common/workspace/host_tool_files.h"

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

absl::Status Walk::Run() {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root_.path));
  if (Strips() && HandsBackOwnership(root_)) {
    // The root itself: the agent can chown /workspace too.
    struct stat st {};
    if (fstat(dir.get(), &st) == 0 && NotBefore(st.st_ctim, since_) && NotTheOwners(root_, st) &&
        GiveBack(root_, dir.get(), root_.path, &st, stripped_, &problems_)) {
      ++handed_back_;
    }
  }
  (void)Dir(dir, "", 0, false);
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
    if (purpose_ == Purpose::kEnd && changed && !in_protected_git && !protected_git &&
        lazaret::workspace::IsHostToolActedOnName(name)) {
      editor_files_.push_back(absl::StrCat(Join(root_.path, crel), S_ISDIR(st.st_mode) ? "/" : ""));
    }
    any = any || changed;
  }
  return any;
}

}  // namespace lazaret::cli::workspace
