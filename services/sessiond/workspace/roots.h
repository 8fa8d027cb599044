// The trees a workspace scan walks (docs/git-shadow.md "Planted
// repositories"): the working tree and the profile's rw volumes, as the
// `lazaret` CLI on the host checked them before the sandbox started. The
// roots themselves are Lazaret's; everything below them is the agent's
// (scan.h).
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_ROOTS_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_ROOTS_H_

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <optional>
#include <string>

namespace lazaret::cli::workspace {

// Caps on one walk. Deeper than max_depth is never skipped silently: the
// end-of-session scan reports it and moves the unchecked directory aside.
struct ScanLimits {
  int max_depth = 4096;
  uint64_t max_entries = 20'000'000;
};

// One tree the sandbox could write.
struct ScanRoot {
  std::string path;  // absolute, canonical, Lazaret-checked
  // The root's own .git is the Git Shadow's (protected while the session
  // runs): it is neither fingerprinted nor neutralised. Only for the
  // workspace of a session with a Git Shadow, and only if it existed when
  // the sandbox started.
  bool root_git_protected = false;
  // Rootful only (the caller decides): every entry the session created or
  // changed that is not owned by the root directory's owner is given to
  // that owner. TakeGitDirSnapshot records the owner before the sandbox
  // starts (so an agent that chowns the root cannot change it); a root
  // owned by uid 0 (gid 0) leaves uids (gids) alone. Rootless podman maps
  // the agent's root to the developer already, so this stays false there.
  bool hand_back_ownership = false;
  std::optional<uid_t> owner_uid = std::nullopt;  // recorded by TakeGitDirSnapshot
  std::optional<gid_t> owner_gid = std::nullopt;
};

// Whether `t` (a ctime) is at or after `since`: the session may have
// written it.
bool NotBefore(const timespec& t, const timespec& since);

// "/proc/self/fd/<fd>": the inode an O_PATH descriptor refers to, whatever
// its name points to now.
std::string ProcFd(int fd);

// `root` + "/" + `rel`; the root itself for "" and ".".
std::string Join(const std::string& root, const std::string& rel);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_ROOTS_H_
