// The workspace scan: what the agent left in the trees it could write (the
// working tree and the profile's rw volumes) that a host program would act
// on by itself. Runs in the `lazaret` CLI on the host, as the developer (or
// root for rootful podman): at session start (a snapshot of the git
// directories), every few ticks while the sandbox runs (setuid/setgid bits
// and file capabilities), at session end and in `lazaret clean` for a
// session whose CLI died (everything, including neutralising git
// directories the session planted or changed).
//
// Trust: every name, type, mode and byte below a root is the agent's. The
// walk goes through directory descriptors (O_DIRECTORY|O_NOFOLLOW, one
// component at a time) and fstatat(AT_SYMLINK_NOFOLLOW); no symlink is ever
// followed. A mode or xattr is changed only through an O_PATH|O_NOFOLLOW
// descriptor whose own fstat said what it is, so a swap between look and
// act cannot redirect the change. Nothing the agent did not write is
// changed: no mode, owner or time of the developer's own files (the one
// exception: a rename in a directory restores that directory's times).
// Rootful (the agent is host root), what the session created or changed is
// handed back to the owner each root directory had when the sandbox
// started, through the same O_PATH descriptor (a symlink itself, never its
// target).
// Whether the agent "wrote" something is judged by ctime, which no one can
// set, against the moment the sandbox started; a git directory counts as
// changed when it was not in the start snapshot or its fingerprint (config,
// commondir, gitdir, hooks) differs.
//
// The parts: roots.h (the trees), walk.h (one walk), snapshot.h (the git
// directories at the start), planted.h (finding, fingerprinting and
// neutralising git directories), privileges.h (setuid/setgid bits and file
// capabilities), ownership.h (the rootful hand-back), and the catalogue of
// files host programs act on (services/common/workspace/catalogue.h).
// Catalogue paths of the workspace itself are held while the session runs
// (docs/operations.md "Held changes"); the scan still names every one the
// session wrote in any root, the profile's rw volumes included.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_SCAN_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_SCAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/sessiond/workspace/planted.h"
#include "services/sessiond/workspace/roots.h"
#include "services/sessiond/workspace/snapshot.h"
#include "services/sessiond/workspace/walk.h"

namespace lazaret::cli::workspace {

struct ScanReport {
  std::vector<PlantedRepository> repositories;
  // "path: what was removed" for setuid/setgid bits and file capabilities.
  std::vector<std::string> stripped;
  // Files and directories of the catalogue (editors, shells, build and hook
  // managers, coding agents) the session created or changed, outermost
  // only, with who acts on them.
  std::vector<ActedOnFile> acted_on_files;
  // Symlinks the session created or changed that lead out of their tree.
  std::vector<OutwardSymlink> outward_symlinks;
  // Entries handed back to a root's owner (rootful), by owner ("alice (uid
  // 1000, gid 1000)").
  std::map<std::string, uint64_t> handed_back;
  // Loud problems: what could not be checked, and what was done about it.
  std::vector<std::string> problems;
};

// The end-of-session scan (sandbox gone). Hands what the session wrote back
// to the root's owner (ScanRoot::hand_back_ownership), strips setuid/setgid
// bits and file capabilities from it, neutralises every git directory
// that is not in the snapshot unchanged (unless the profile opted out, in
// which case they are only reported), moves aside directories deeper than
// the limit, lists the catalogue files the session wrote and the symlinks
// it left that lead out of the tree. `snapshot.complete == false` makes
// every git directory that is not provably unchanged count as changed.
absl::StatusOr<ScanReport> ScanAtSessionEnd(const GitDirSnapshot& snapshot,
                                            const ScanLimits& limits = {});

// The report as lines for the terminal (without a prefix).
std::vector<std::string> ReportLines(const ScanReport& report);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_SCAN_H_
