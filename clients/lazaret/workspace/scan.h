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
#ifndef LAZARET_CLIENTS_LAZARET_WORKSPACE_SCAN_H_
#define LAZARET_CLIENTS_LAZARET_WORKSPACE_SCAN_H_

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

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

// The git directories found in the roots when the sandbox started, by root
// index and path relative to it ("." for the root itself), with their
// fingerprints.
struct GitDirSnapshot {
  timespec since{};
  std::string session_id;
  std::vector<ScanRoot> roots;
  std::map<std::pair<size_t, std::string>, std::string> prints;
  bool complete = true;    // false: a limit stopped the walk (reported)
  bool quarantine = true;  // the profile did not opt out
};

// Walks the roots (sandbox not started yet) and records every git
// directory: a directory git's discovery would take for one (HEAD that is
// not a directory, plus objects/ and refs/, or plus commondir - setup.c
// is_git_directory), and every `.git` that is not a directory (gitfile or
// symlink). `root_git_protected` roots whose .git does not exist are
// recorded as unprotected.
absl::StatusOr<GitDirSnapshot> TakeGitDirSnapshot(const std::string& session_id,
                                                  std::vector<ScanRoot> roots, bool quarantine,
                                                  const ScanLimits& limits = {});

// The snapshot as the bytes of its file in the session directory (for the
// reap of a killed session): lazaret.common.v1.WorkspaceSnapshot.
std::string SerializeSnapshot(const GitDirSnapshot& snapshot);
absl::StatusOr<GitDirSnapshot> ParseSnapshot(const std::string& text);

// Name of the snapshot file in the session directory.
inline constexpr char kSnapshotFileName[] = "workspace-scan";

// What one git directory the session planted or changed became.
struct PlantedRepository {
  std::string path;  // absolute, as it was
  std::string kind;  // "nested .git directory", "gitfile", "bare layout", ...
  bool neutralised = false;
  std::string now_at;   // the quarantined name (absolute), when renamed
  std::string inspect;  // a shell command to look at it
  std::string restore;  // a shell command that undoes the quarantine
  std::string error;    // why it could not be neutralised
};

struct ScanReport {
  std::vector<PlantedRepository> repositories;
  // "path: what was removed" for setuid/setgid bits and file capabilities.
  std::vector<std::string> stripped;
  // Files and directories editors, shells and version managers act on when
  // a folder is opened, created or changed by the session (absolute paths;
  // directories end in '/').
  std::vector<std::string> editor_files;
  // Entries handed back to a root's owner (rootful), by owner ("alice (uid
  // 1000, gid 1000)").
  std::map<std::string, uint64_t> handed_back;
  // Loud problems: what could not be checked, and what was done about it.
  std::vector<std::string> problems;
};

// The suffix a quarantined git entry gets: ".lazaret-quarantine-<session>".
std::string QuarantineSuffix(const std::string& session_id);

// The end-of-session scan (sandbox gone). Hands what the session wrote back
// to the root's owner (ScanRoot::hand_back_ownership), strips setuid/setgid
// bits and file capabilities from it, neutralises every git directory
// that is not in the snapshot unchanged (unless the profile opted out, in
// which case they are only reported), moves aside directories deeper than
// the limit, and lists editor files. `snapshot.complete == false` makes
// every git directory that is not provably unchanged count as changed.
absl::StatusOr<ScanReport> ScanAtSessionEnd(const GitDirSnapshot& snapshot,
                                            const ScanLimits& limits = {});

// The periodic sweep while the sandbox runs: hands entries changed at or
// after `since` back to the root's owner (ScanRoot::hand_back_ownership;
// counted in `handed_back` when it is not null) and strips setuid/setgid
// bits and file capabilities from them. Appends to `stripped`. Bounded by
// `limits`; cheap when nothing changed (one fstatat per entry).
absl::Status StripPrivilegeBits(const std::vector<ScanRoot>& roots, const timespec& since,
                                const ScanLimits& limits, std::vector<std::string>* stripped,
                                std::map<std::string, uint64_t>* handed_back = nullptr);

// The report as lines for the terminal (without a prefix).
std::vector<std::string> ReportLines(const ScanReport& report);

// True for the names (one path component) the editor list watches.
bool IsEditorActedOnName(const std::string& name);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_CLIENTS_LAZARET_WORKSPACE_SCAN_H_
