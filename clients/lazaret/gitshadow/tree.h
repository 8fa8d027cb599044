// Walking, reading and copying directories the sandbox can write. Runs in the
// `lazaret` CLI on the host, as the developer. Distrusts every name, type and
// byte below the root it is given: the agent may have planted symlinks,
// FIFOs, sockets or device nodes, and may swap entries while we look.
// Everything goes through directory descriptors opened with
// O_DIRECTORY|O_NOFOLLOW and fstatat(AT_SYMLINK_NOFOLLOW); a file is opened
// with O_PATH first and reopened for reading only after fstat says it is a
// regular file, so opening a FIFO or device node never happens. Nothing here
// ever stats a path and then opens it by name.
#ifndef LAZARET_CLIENTS_LAZARET_GITSHADOW_TREE_H_
#define LAZARET_CLIENTS_LAZARET_GITSHADOW_TREE_H_

#include <time.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli::gitshadow {

// Closes a plain descriptor on scope exit.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd();
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The parts of a relative path ("a/b/c": "a/b" and "c"; "c": "" and "c").
std::string Dirname(const std::string& rel);
std::string Basename(const std::string& rel);

// An owned directory descriptor opened without following symlinks.
class DirFd {
 public:
  DirFd() = default;
  ~DirFd();
  DirFd(DirFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirFd& operator=(DirFd&& other) noexcept;
  DirFd(const DirFd&) = delete;
  DirFd& operator=(const DirFd&) = delete;

  // Opens an absolute path whose every component the caller trusts (a path
  // Lazaret itself created), refusing a symlink as the last component.
  static absl::StatusOr<DirFd> Open(const std::string& path);
  // Opens `name` (one component) below this directory, never following a
  // symlink. Changes nothing: a directory the caller may not read is an
  // error (EACCES), never made readable. For trees the developer owns (the
  // workspace, rw volumes).
  absl::StatusOr<DirFd> OpenChild(const std::string& name) const;
  // OpenChild for trees that are Lazaret's own state or that only the
  // sandbox writes and Lazaret sweeps or removes (the Git Shadow's state
  // directories, the sandbox-written object and ref trees): a directory the
  // caller owns but lacks u+rwx on (with rootless podman the agent can
  // leave 0000 or 0555 directories owned by the developer) gets u+rwx, so
  // that it can be read and its entries removed. Never use it on the
  // workspace: it changes the mode of what it opens.
  absl::StatusOr<DirFd> OpenOwnChild(const std::string& name) const;

  int get() const { return fd_; }

 private:
  explicit DirFd(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Caps on what one walk of a sandbox-writable tree may cost.
struct WalkLimits {
  int max_depth = 16;
  uint64_t max_entries = 4'000'000;
};

enum class EntryKind { kFile, kDirectory };
enum class Verdict { kKeep, kRemove };

// Decides whether a regular file or directory at `rel` (components from the
// walk root, the entry's own name last) may stay. classify.h has those of
// the Git Shadow's trees.
using Classifier = std::function<Verdict(const std::vector<std::string>& rel, EntryKind kind)>;

// Walks `root` and removes - never following, never opening - every entry
// that is neither a regular file nor a directory, every entry `classify`
// rejects (directories recursively), and everything deeper than
// limits.max_depth. Appends one line per removal to `removed` (path relative
// to `root`, and what it was).
absl::Status SweepTree(const std::string& root, const Classifier& classify,
                       const WalkLimits& limits, std::vector<std::string>* removed);

// The names in `dir` (not "." or ".."), through a descriptor of its own.
absl::StatusOr<std::vector<std::string>> ListNames(const DirFd& dir);

// Reads the regular file `name` below `dir` (at most `max_bytes`; larger is
// an error). Refuses anything that is not a regular file without opening it.
absl::StatusOr<std::string> ReadRegularFileAt(const DirFd& dir, const std::string& name,
                                              uint64_t max_bytes);

// Creates or replaces `name` in `dir` (a directory Lazaret owns) with
// `contents`, through a temporary file and rename.
absl::Status WriteFileAt(const DirFd& dir, const std::string& name, const std::string& contents,
                         int mode = 0644);

// One regular file in a ref tree: its ref name below the root ("a/b") and its
// contents (at most 256 bytes; longer files are reported as such).
struct RefFile {
  std::string name;
  std::string contents;
  bool too_long = false;
};

// Lists the regular files below `root` (a ref tree already swept), skipping
// "*.lock". At most `max_files`: with `truncated` null, more is an error;
// otherwise the walk stops there and sets *truncated.
absl::StatusOr<std::vector<RefFile>> ListRefFiles(const std::string& root, size_t max_files,
                                                  bool* truncated = nullptr);

// The loose ref file at `rel` ("a/b") below `root`, through descriptors,
// never following a symlink: nullopt when nothing is there; an error when
// something other than a regular file of at most 256 bytes is.
absl::StatusOr<std::optional<std::string>> ReadRefFileAt(const std::string& root,
                                                         const std::string& rel);

// What identifies one version of the regular file `name` in `dir` without
// reading it: "<size> <mtime> <ctime> <inode>". nullopt when it is not a
// regular file. The sandbox can set an mtime back, but any write or rename
// moves the ctime, which it cannot set.
std::optional<std::string> RegularFileFingerprint(const DirFd& dir, const std::string& name);

// Removes `name` below `dir` (recursively for a directory) without following
// symlinks. Missing is fine.
absl::Status RemoveTreeAt(const DirFd& dir, const std::string& name);

// Copies of sandbox-written object files.
struct MirrorStats {
  uint64_t files_copied = 0;
  uint64_t bytes_copied = 0;
  uint64_t files_removed = 0;
  // Packs in `dst` ("pack/pack-<id>.pack") that have no index yet; the
  // caller runs `git index-pack` on each.
  std::vector<std::string> packs_to_index;
};

struct MirrorLimits {
  uint64_t max_file_bytes = 4ull << 30;
  uint64_t max_total_bytes = 16ull << 30;
  uint64_t max_files = 2'000'000;
  // Packs not to copy: "pack/pack-<id>.pack <RegularFileFingerprint>" of a
  // pack in `src` that `git index-pack` already refused. A changed file has
  // another fingerprint and is tried again.
  const std::set<std::string>* skip_packs = nullptr;
};

// Makes `dst` (a directory Lazaret owns, never seen by the sandbox) hold a
// copy of the importable object files of the object directory `src` (which
// the sandbox writes): loose objects "xx/<rest>" and packs "pack/pack-*.pack"
// (only once `src` also has the pack's ".idx", i.e. git finished writing it;
// the index itself is not copied - see packs_to_index). A file already in
// `dst` with the same size is not copied again; files in `dst` that are gone
// from `src` are removed. Only regular files are read, through O_PATH +
// fstat + reopen; `dst` never gets an info/ directory from `src`.
absl::Status MirrorObjectFiles(const std::string& src, const std::string& dst, size_t hex_length,
                               const MirrorLimits& limits, MirrorStats* stats);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_CLIENTS_LAZARET_GITSHADOW_TREE_H_
