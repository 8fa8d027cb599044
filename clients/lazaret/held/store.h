// The held store: the versions of catalogue files (files host programs act
// on by themselves; services/common/workspace/catalogue.h) that a session
// changed or created in the workspace, kept in the profile instead of the
// developer's folder until the developer applies or drops them
// (docs/operations.md "Held changes"). Runs in the `lazaret` CLI: in `lazaret
// run` at session end and while it runs, in `lazaret clean --session` when
// the supervisor reaps a dead CLI, and in `lazaret held`.
//
// Trust: the store's directory is Lazaret's (<profile_dir>/held/<key>/,
// created 0700), but every byte held comes from the sandbox: a rel path is
// checked as a string (relative, no "." / ".." / empty component, each
// component at most NAME_MAX, no NUL) before it reaches the filesystem, files
// are opened one component at a time never following a symlink, and only
// regular files (setuid/setgid/sticky dropped) and symlinks (their target
// text, never followed) are held. Apply is the one place that writes the
// agent's bytes into the developer's folder; it opens beneath the workspace
// root with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS.
//
// Layout of <profile_dir>/held/<key>/ (key: the first 16 hex digits of the
// SHA-256 of the workspace's canonical host path):
//   workspace      the canonical host path, written once; Open refuses a key
//                  directory whose `workspace` names another path
//   manifest.json  lazaret.held.v1.Manifest as JSON, replaced atomically
//                  (temporary file, fsync, rename)
//   files/<rel>    the held versions (absent for a deletion)
//   lock           flock held around every read-modify-write, so sessions
//                  ending at once and `lazaret held` never lose an entry
#ifndef LAZARET_CLIENTS_LAZARET_HELD_STORE_H_
#define LAZARET_CLIENTS_LAZARET_HELD_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/common/fs/fd.h"

namespace lazaret::cli::held {

enum class Change { kCreated, kChanged, kDeleted };

// "created", "changed", "deleted".
absl::string_view ChangeName(Change change);

struct HeldEntry {
  std::string rel;
  Change change = Change::kChanged;
  std::string kind;  // "file" | "symlink" | "deleted"
  std::string session_id;
  int64_t held_unix = 0;
};

// Per held file: a regular file larger than this is refused (the catalogue's
// files are settings and scripts, kilobytes).
inline constexpr uint64_t kMaxHeldFileBytes = 8ull << 20;
// Per store: the sum of the held files' sizes.
inline constexpr uint64_t kMaxHeldStoreBytes = 64ull << 20;

// OK when `rel` may name a held path: relative, components separated by
// single '/', none empty, "." or "..", none longer than NAME_MAX, no NUL.
absl::Status CheckHeldRel(absl::string_view rel);

// The key directory name for `workspace` (a canonical absolute path).
std::string StoreKey(absl::string_view workspace);

// <profile_dir>/held: where every workspace's store of a profile lives.
std::string HeldRoot(const std::string& profile_dir);

// The workspaces (canonical host paths) whose stores in `profile_dir` hold
// at least one entry, sorted; none when the profile holds nothing.
absl::StatusOr<std::vector<std::string>> HeldWorkspaces(const std::string& profile_dir);

class Store {
 public:
  // Opens the store of `workspace` (a canonical absolute host path) in
  // `profile_dir`. With create=false a missing store is NotFound; with
  // create=true it is made (directories 0700).
  static absl::StatusOr<Store> Open(const std::string& profile_dir, const std::string& workspace,
                                    bool create);

  Store(Store&&) noexcept = default;
  Store& operator=(Store&&) noexcept = default;

  const std::string& dir() const { return dir_; }
  const std::string& workspace() const { return workspace_; }
  // <dir>/files: what a view is built from.
  const std::string& files_dir() const { return files_dir_; }

  // Every held entry, sorted by rel.
  absl::StatusOr<std::vector<HeldEntry>> List() const;
  // The entry for `rel`, nullopt when it is not held.
  absl::StatusOr<std::optional<HeldEntry>> Find(const std::string& rel) const;

  // Holds the file or symlink at `rel` below `from` (a directory fd: a
  // session view, or the workspace root for a new entry), never following a
  // symlink; replaces an earlier held version. Refuses devices, fifos,
  // sockets, directories and files over kMaxHeldFileBytes (or a store over
  // kMaxHeldStoreBytes), with an error naming the file.
  absl::Status Hold(const fs::DirFd& from, const std::string& rel, Change change,
                    const std::string& session_id);
  // Records that the session deleted `rel` (its held version, if any, goes).
  absl::Status HoldDeletion(const std::string& rel, const std::string& session_id);
  // Forgets `rel`: its entry and held file. Not held is NotFound.
  absl::Status Drop(const std::string& rel);
  // Writes the held version into the host workspace (opened beneath the
  // workspace root: RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS; missing parent
  // directories created one at a time, 0755; temp file + fsync + renameat;
  // a deletion is unlinkat), hands it to the workspace root's owner when run
  // as root, then Drop(rel). A parent that is a symlink or not a directory,
  // or a target that is a directory, is refused with a message naming it.
  absl::Status Apply(const std::string& rel);

 private:
  // Drop with the store's lock already held by the caller.
  absl::Status DropLocked(const std::string& rel);

  Store(std::string dir, std::string workspace, std::string files_dir, fs::DirFd dir_fd)
      : dir_(std::move(dir)),
        workspace_(std::move(workspace)),
        files_dir_(std::move(files_dir)),
        dir_fd_(std::move(dir_fd)) {}

  std::string dir_;
  std::string workspace_;
  std::string files_dir_;
  fs::DirFd dir_fd_;
};

}  // namespace lazaret::cli::held

#endif  // LAZARET_CLIENTS_LAZARET_HELD_STORE_H_
