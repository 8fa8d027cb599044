// One walk of one tree the sandbox could write, for the workspace scan:
// the snapshot of git directories before the sandbox starts, the periodic
// sweep while it runs, and the end-of-session scan (scan.h). Runs in the
// `lazaret` CLI on the host, as the developer (or root for rootful podman).
// Every name, type and mode below the root is the agent's: the walk goes
// through directory descriptors (O_DIRECTORY|O_NOFOLLOW, one component at a
// time) and fstatat(AT_SYMLINK_NOFOLLOW), never follows a symlink, never
// adds a permission to get in (what it cannot read is reported), and holds
// one descriptor per level, within a depth and an entry limit that are never
// passed silently.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_WALK_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_WALK_H_

#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "services/sessiond/workspace/planted.h"
#include "services/sessiond/workspace/roots.h"
#include "services/common/fs/fd.h"

namespace lazaret::cli::workspace {

// Raises the soft descriptor limit so a walk can hold one directory
// descriptor per level down to `depth`. Returns the depth it can afford.
int AffordableDepth(int depth);

// What a walk is for: the snapshot finds git directories; the sweep
// strips (and hands back); the end does both, lists the catalogue files the
// session wrote and the symlinks it left that lead out of the tree.
enum class Purpose { kSnapshot, kEnd, kStrip };

// A directory that could not be checked: deeper than the limit, or not
// readable.
struct Unchecked {
  std::string rel;
  std::string why;
  bool agent_made = false;
};

// A file or directory of the catalogue (services/common/workspace/
// catalogue.h) the session created or changed.
struct ActedOnFile {
  std::string path;   // absolute; a directory ends in '/'
  std::string tools;  // who acts on it: "Claude Code", "direnv"
};

// A symlink the session created or changed whose target leads out of the
// tree it is in: an absolute target, or a relative one that climbs above
// the root (resolved through the tree's own symlinks, never followed
// outside it).
struct OutwardSymlink {
  std::string path;  // absolute
  std::string target;
};

// Whether the symlink at `link_rel` below `root` with `target` leads out of
// the tree: `target` is absolute, or a relative walk from the link's
// directory, through the tree's symlinks (looked up beneath `root`, never
// followed past it), climbs above `root`. Bounded: at most 40 symlinks and
// 4096 components; a loop or a missing component ends the lookups (the
// rest is judged lexically).
bool SymlinkLeavesTree(const fs::DirFd& root, const std::string& link_rel,
                       const std::string& target);

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

  absl::Status Run();

  uint64_t handed_back() const { return handed_back_; }

  bool complete() const { return complete_; }
  std::vector<FoundGitDir>& git_dirs() { return git_dirs_; }
  std::vector<Unchecked>& unchecked() { return unchecked_; }
  std::vector<ActedOnFile>& acted_on_files() { return acted_on_files_; }
  std::vector<OutwardSymlink>& outward_symlinks() { return outward_symlinks_; }
  std::vector<std::string>& problems() { return problems_; }

 private:
  bool FindsGitDirs() const { return purpose_ != Purpose::kStrip; }
  bool Strips() const { return purpose_ != Purpose::kSnapshot; }

  // Returns whether anything in `dir` was created or changed at or after
  // since_ (or could not be checked).
  bool Dir(const fs::DirFd& dir, const std::string& rel, int depth, bool in_protected_git);

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
  std::vector<ActedOnFile> acted_on_files_;
  std::vector<OutwardSymlink> outward_symlinks_;
  const fs::DirFd* root_dir_ = nullptr;  // set for the length of Run()
  std::vector<std::string> problems_;
};

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_WALK_H_
