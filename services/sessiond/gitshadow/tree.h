// Walking, reading and copying directories the sandbox can write: the Git
// Shadow's object and ref trees. Runs in the `lazaret` CLI on the host, as
// the developer. Distrusts every name, type and byte below the root it is
// given: the agent may have planted symlinks, FIFOs, sockets or device
// nodes, and may swap entries while we look. Everything goes through
// lazaret_fs (services/common/fs/): directory descriptors opened with
// O_DIRECTORY|O_NOFOLLOW and fstatat(AT_SYMLINK_NOFOLLOW); a file is opened
// with O_PATH first and reopened for reading only after fstat says it is a
// regular file, so opening a FIFO or device node never happens. Nothing here
// ever stats a path and then opens it by name.
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_TREE_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_TREE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lazaret::cli::gitshadow {

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
  // Packs not to copy: "pack/pack-<id>.pack <fs::RegularFileFingerprint>" of a
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

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_TREE_H_
