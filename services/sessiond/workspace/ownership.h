// Rootful ownership hand-back (docs/operations.md "Rootful file
// ownership"): with rootful podman the agent is host root, so what it
// creates in the workspace or an rw volume belongs to host root (or to any
// uid it chose). Runs in the `lazaret` CLI on the host, as root, from the
// periodic sweep and the end-of-session scan: every entry the session
// created or changed (ctime) that is not owned by its root's owner - as
// recorded before the sandbox started, so an agent that chowns the root
// cannot change it - is given to that owner. The entry is the agent's: it
// is changed only through an O_PATH|O_NOFOLLOW descriptor whose own fstat
// decided, and a symlink is chowned itself, never its target.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_OWNERSHIP_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_OWNERSHIP_H_

#include <sys/stat.h>
#include <time.h>

#include <string>
#include <vector>

#include "services/sessiond/workspace/roots.h"
#include "services/common/fs/fd.h"

namespace lazaret::cli::workspace {

// "alice (uid 1000, gid 1000)", "uid 1000", "group staff (gid 50)": who a
// root's entries are handed back to.
std::string OwnerName(const ScanRoot& root);

// Whether `root` asks for the hand-back (ScanRoot::hand_back_ownership) and
// has an owner recorded.
bool HandsBackOwnership(const ScanRoot& root);

// Whether `st` has another uid or gid than `root`'s recorded owner.
bool NotTheOwners(const ScanRoot& root, const struct stat& st);

// Gives the inode `fd` refers to (an O_PATH descriptor, or the root's own
// directory descriptor) to the root's owner; `st` is that descriptor's
// own fstat, and is refreshed. AT_EMPTY_PATH on an O_PATH descriptor of a
// symlink changes the symlink itself (lchown), never its target. The
// kernel clears setuid/setgid bits and file capabilities of a regular
// file it chowns; that is reported like the strip would have (in
// `stripped`, when not null). Returns whether it was given; why not goes to
// `problems`.
bool GiveBack(const ScanRoot& root, int fd, const std::string& path, struct stat* st,
              std::vector<std::string>* stripped, std::vector<std::string>* problems);

// What the session created or changed (ctime at or after `since`) and
// someone else owns (host root, or any uid the agent chose) goes to the
// root's owner: `name` in `dir`, at `rel` below the root, `st` its fstatat
// (refreshed when it was looked at again). Returns whether it was given.
bool MaybeGiveBack(const ScanRoot& root, const timespec& since, const fs::DirFd& dir,
                   const std::string& name, const std::string& rel, struct stat* st,
                   std::vector<std::string>* stripped, std::vector<std::string>* problems);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_OWNERSHIP_H_
