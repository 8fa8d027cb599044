#include "services/sessiond/gitshadow/tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/sessiond/gitshadow/classify.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"

namespace lazaret::cli::gitshadow {

using fs::DirFd;

namespace {

// Regular-file test that never follows a symlink. Returns the size.
bool RegularFileSize(const DirFd& dir, const std::string& name, uint64_t* size) {
  struct stat st {};
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (!S_ISREG(st.st_mode)) return false;
  *size = static_cast<uint64_t>(st.st_size);
  return true;
}

bool IsDirectory(const DirFd& dir, const std::string& name) {
  struct stat st {};
  return fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

struct SweepState {
  const Classifier* classify;
  const WalkLimits* limits;
  std::vector<std::string>* removed;
  uint64_t entries = 0;
};

absl::Status SweepDir(const DirFd& dir, std::vector<std::string>& rel, SweepState& state) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(dir));
  for (const auto& name : names) {
    if (++state.entries > state.limits->max_entries) {
      return absl::ResourceExhaustedError(
          absl::StrCat("more than ", state.limits->max_entries, " entries"));
    }
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return ErrnoStatus(absl::StrCat("inspecting ", name), errno);
    }
    rel.push_back(name);
    const std::string path = absl::StrJoin(rel, "/");
    const bool too_deep = static_cast<int>(rel.size()) > state.limits->max_depth;
    if (S_ISDIR(st.st_mode)) {
      if (too_deep || (*state.classify)(rel, EntryKind::kDirectory) == Verdict::kRemove) {
        LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(dir, name));
        state.removed->push_back(absl::StrCat(path, ": unexpected directory, removed"));
      } else if (auto child = dir.OpenOwnChild(name); child.ok()) {
        LAZ_RETURN_IF_ERROR(SweepDir(*child, rel, state));
      } else {
        // Replaced by something else since fstatat: remove whatever it is.
        LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(dir, name));
        state.removed->push_back(absl::StrCat(path, ": changed type while swept, removed"));
      }
    } else if (S_ISREG(st.st_mode)) {
      if (too_deep || (*state.classify)(rel, EntryKind::kFile) == Verdict::kRemove) {
        LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(dir, name));
        state.removed->push_back(absl::StrCat(path, ": unexpected file, removed"));
      }
    } else {
      LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(dir, name));
      state.removed->push_back(absl::StrCat(path, ": ", fs::FileTypeName(st.st_mode), ", removed"));
    }
    rel.pop_back();
  }
  return absl::OkStatus();
}

absl::Status ListRefFilesIn(const DirFd& dir, const std::string& prefix, int depth,
                            size_t max_files, std::vector<RefFile>* out, bool* truncated) {
  if (depth > 64) return absl::ResourceExhaustedError("ref tree too deep");
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(dir));
  for (const auto& name : names) {
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string ref = prefix.empty() ? name : absl::StrCat(prefix, "/", name);
    if (S_ISDIR(st.st_mode)) {
      auto child = dir.OpenOwnChild(name);
      if (!child.ok()) continue;
      LAZ_RETURN_IF_ERROR(ListRefFilesIn(*child, ref, depth + 1, max_files, out, truncated));
      if (truncated != nullptr && *truncated) return absl::OkStatus();
    } else if (S_ISREG(st.st_mode) && !absl::EndsWith(name, ".lock")) {
      if (out->size() >= max_files) {
        if (truncated != nullptr) {
          *truncated = true;
          return absl::OkStatus();
        }
        return absl::ResourceExhaustedError(absl::StrCat("more than ", max_files, " refs"));
      }
      RefFile f;
      f.name = ref;
      auto contents = fs::ReadRegularFileAt(dir, name, 256);
      if (contents.ok()) {
        f.contents = *std::move(contents);
      } else if (contents.status().code() == absl::StatusCode::kResourceExhausted) {
        f.too_long = true;
      } else {
        continue;  // vanished or changed type while listed
      }
      out->push_back(std::move(f));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SweepTree(const std::string& root, const Classifier& classify,
                       const WalkLimits& limits, std::vector<std::string>* removed) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  SweepState state{&classify, &limits, removed};
  std::vector<std::string> rel;
  return SweepDir(dir, rel, state);
}

absl::StatusOr<std::vector<RefFile>> ListRefFiles(const std::string& root, size_t max_files,
                                                  bool* truncated) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  std::vector<RefFile> out;
  if (truncated != nullptr) *truncated = false;
  LAZ_RETURN_IF_ERROR(ListRefFilesIn(dir, "", 0, max_files, &out, truncated));
  return out;
}

absl::StatusOr<std::optional<std::string>> ReadRefFileAt(const std::string& root,
                                                         const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  const std::vector<std::string> parts = absl::StrSplit(rel, '/');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    struct stat st {};
    if (fstatat(dir.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return std::optional<std::string>();
      return ErrnoStatus(absl::StrCat("looking at ", rel), errno);
    }
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(parts[i], " is not a directory"));
    }
    LAZ_ASSIGN_OR_RETURN(dir, dir.OpenChild(parts[i]));
  }
  struct stat st {};
  if (fstatat(dir.get(), parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return ErrnoStatus(absl::StrCat("looking at ", rel), errno);
  }
  LAZ_ASSIGN_OR_RETURN(std::string contents, fs::ReadRegularFileAt(dir, parts.back(), 256));
  return std::optional<std::string>(std::move(contents));
}

absl::Status MirrorObjectFiles(const std::string& src, const std::string& dst, size_t hex_length,
                               const MirrorLimits& limits, MirrorStats* stats) {
  LAZ_ASSIGN_OR_RETURN(DirFd src_dir, DirFd::Open(src));
  LAZ_ASSIGN_OR_RETURN(DirFd dst_dir, DirFd::Open(dst));
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> top, fs::ListNames(src_dir));

  // The importable files of `src`, by directory ("xx" or "pack").
  std::set<std::pair<std::string, std::string>> wanted;
  uint64_t total = 0;
  auto copy = [&](const DirFd& from, const DirFd& to, const std::string& subdir,
                  const std::string& name) -> absl::Status {
    if (wanted.size() >= limits.max_files) {
      return absl::ResourceExhaustedError(
          absl::StrCat("more than ", limits.max_files, " object files"));
    }
    uint64_t src_size = 0;
    if (!RegularFileSize(from, name, &src_size)) return absl::OkStatus();
    wanted.emplace(subdir, name);
    uint64_t dst_size = 0;
    if (RegularFileSize(to, name, &dst_size) && dst_size == src_size) return absl::OkStatus();
    if (total + src_size > limits.max_total_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "sandbox objects exceed the import limit of ", limits.max_total_bytes, " bytes"));
    }
    auto copied = fs::CopyRegularFileAt(from, name, to, name, limits.max_file_bytes, 0444);
    if (!copied.ok()) {
      if (copied.status().code() == absl::StatusCode::kNotFound) {
        wanted.erase({subdir, name});  // gone meanwhile (repacked); fine
        return absl::OkStatus();
      }
      return copied.status();
    }
    total += *copied;
    ++stats->files_copied;
    stats->bytes_copied += *copied;
    return absl::OkStatus();
  };

  for (const auto& sub : top) {
    const bool loose_dir = sub.size() == 2 && IsLowerHex(sub);
    if (!loose_dir && sub != "pack") continue;
    if (!IsDirectory(src_dir, sub)) continue;
    auto from = src_dir.OpenOwnChild(sub);
    if (!from.ok()) continue;
    LAZ_ASSIGN_OR_RETURN(DirFd to, fs::MakeOwnDirsAt(dst_dir, sub, 0755));
    LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(*from));
    for (const auto& name : names) {
      if (loose_dir) {
        if (name.size() == hex_length - 2 && IsLowerHex(name)) {
          LAZ_RETURN_IF_ERROR(copy(*from, to, sub, name));
        }
        continue;
      }
      // A pack counts once git finished it, which its index says. The
      // sandbox's index itself is never copied: host git parses untrusted
      // pack bytes only through `git index-pack`, which rebuilds the index.
      if (!absl::StartsWith(name, "pack-") || !absl::EndsWith(name, ".idx")) continue;
      const std::string base = name.substr(0, name.size() - 4);
      if (!IsPackFileName(name)) continue;
      uint64_t ignored = 0;
      if (!RegularFileSize(*from, base + ".pack", &ignored)) continue;
      if (limits.skip_packs != nullptr) {
        const std::optional<std::string> fp = fs::RegularFileFingerprint(*from, base + ".pack");
        if (fp && limits.skip_packs->count(absl::StrCat(sub, "/", base, ".pack ", *fp)) != 0) {
          continue;  // refused before, unchanged since
        }
      }
      const uint64_t copied_before = stats->files_copied;
      LAZ_RETURN_IF_ERROR(copy(*from, to, sub, base + ".pack"));
      if (wanted.count({sub, base + ".pack"}) == 0) continue;
      wanted.emplace(sub, name);
      if (stats->files_copied != copied_before) unlinkat(to.get(), name.c_str(), 0);
      if (!RegularFileSize(to, name, &ignored)) {
        stats->packs_to_index.push_back(absl::StrCat(sub, "/", base, ".pack"));
      }
    }
  }

  // Drop what `src` no longer has (repacked or pruned inside the sandbox).
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> dst_top, fs::ListNames(dst_dir));
  for (const auto& sub : dst_top) {
    const bool loose_dir = sub.size() == 2 && IsLowerHex(sub);
    if (!loose_dir && sub != "pack") continue;
    auto to = dst_dir.OpenOwnChild(sub);
    if (!to.ok()) continue;
    LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(*to));
    // Indexes go before their packs so `dst` never has an index alone.
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return absl::EndsWith(a, ".idx") > absl::EndsWith(b, ".idx");
    });
    for (const auto& name : names) {
      if (wanted.count({sub, name}) != 0) continue;
      if (unlinkat(to->get(), name.c_str(), 0) == 0) ++stats->files_removed;
    }
  }
  return absl::OkStatus();
}

}  // namespace lazaret::cli::gitshadow
