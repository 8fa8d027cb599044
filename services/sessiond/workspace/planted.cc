#include "services/sessiond/workspace/planted.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/fs/sha256.h"
#include "services/common/status_util.h"
#include "services/spawn/subprocess.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::workspace {
namespace {

using vocab::Basename;
using fs::DirFd;
using vocab::Dirname;
using fs::ListNames;
using fs::UniqueFd;

constexpr uint64_t kMaxFingerprintFileBytes = 4ull << 20;
constexpr size_t kMaxHooks = 4096;

// Reads a regular file below `dir` for a fingerprint, never changing its
// mode (an unreadable file is fingerprinted by identity and ctime).
std::string FileField(const DirFd& dir, const std::string& name) {
  const UniqueFd path_fd(openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!path_fd.valid()) return errno == ENOENT ? "absent" : absl::StrCat("error ", errno);
  const int fd = path_fd.get();
  struct stat st {};
  if (fstat(fd, &st) != 0) return absl::StrCat("error ", errno);
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    const ssize_t n = readlinkat(dir.get(), name.c_str(), target, sizeof(target));
    return absl::StrCat("symlink ", n < 0 ? "?" : std::string(target, static_cast<size_t>(n)));
  }
  if (S_ISDIR(st.st_mode)) return "directory";
  if (!S_ISREG(st.st_mode)) return absl::StrCat("special ", st.st_mode & S_IFMT);
  const std::string identity = absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_size);
  if (static_cast<uint64_t>(st.st_size) > kMaxFingerprintFileBytes) {
    return absl::StrCat("large ", identity, " ", st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec);
  }
  // O_NOATIME: reading for a fingerprint is not a use of the file.
  UniqueFd in(open(ProcFd(fd).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOATIME));
  if (!in.valid() && errno == EPERM)
    in.reset(open(ProcFd(fd).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!in.valid()) {
    return absl::StrCat("unreadable ", identity, " ", st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec);
  }
  // More than fstat said: it grew while read.
  absl::StatusOr<std::string> contents = fs::ReadAll(in.get(), kMaxFingerprintFileBytes, name);
  if (absl::IsResourceExhausted(contents.status())) return absl::StrCat("grew ", identity);
  if (!contents.ok()) return absl::StrCat("unreadable ", identity);
  return absl::StrCat("file ", *contents);
}

// What host git takes orders from in a git directory: its identity, config,
// config.worktree, commondir, gitdir and every hook. Not HEAD, refs or
// objects, which the developer's own git changes while the session runs.
std::string GitDirFingerprint(const DirFd& gitdir) {
  fs::Sha256 h;
  struct stat st {};
  if (fstat(gitdir.get(), &st) == 0) h.UpdateField(absl::StrCat("dir ", st.st_dev, ":", st.st_ino));
  for (const char* name : {"config", "config.worktree", "commondir", "gitdir"}) {
    h.UpdateField(name);
    h.UpdateField(FileField(gitdir, name));
  }
  h.UpdateField("hooks");
  h.UpdateField(FileField(gitdir, "hooks"));
  if (auto hooks = gitdir.OpenChild("hooks"); hooks.ok()) {
    auto names = ListNames(*hooks);
    if (!names.ok()) {
      h.UpdateField("unlistable");
    } else {
      std::sort(names->begin(), names->end());
      if (names->size() > kMaxHooks) names->resize(kMaxHooks);
      for (const auto& n : *names) {
        h.UpdateField(n);
        h.UpdateField(FileField(*hooks, n));
      }
    }
  }
  return h.HexDigest();
}

std::string GitFileFingerprint(const DirFd& parent, const struct stat& st) {
  fs::Sha256 h;
  h.UpdateField(absl::StrCat("gitfile ", st.st_dev, ":", st.st_ino));
  h.UpdateField(FileField(parent, ".git"));
  return h.HexDigest();
}

bool Exists(const DirFd& dir, const char* name, struct stat* st) {
  return fstatat(dir.get(), name, st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace

std::optional<FoundGitDir> GitLayoutAt(const DirFd& dir, const std::string& rel) {
  struct stat st {};
  if (!Exists(dir, "HEAD", &st) || S_ISDIR(st.st_mode)) return std::nullopt;
  const bool commondir = Exists(dir, "commondir", &st);
  const bool objects_refs = Exists(dir, "objects", &st) && Exists(dir, "refs", &st);
  if (!commondir && !objects_refs) return std::nullopt;
  FoundGitDir f;
  f.rel = rel.empty() ? "." : rel;
  f.layout = true;
  const std::string base = rel.substr(rel.rfind('/') + 1);
  if (base == ".git") {
    f.kind = "nested .git directory";
  } else if (commondir) {
    f.kind = "git directory with commondir (worktree layout)";
  } else {
    f.kind = "bare repository layout";
  }
  f.print = GitDirFingerprint(dir);
  return f;
}

FoundGitDir GitFileAt(const DirFd& parent, const std::string& rel, const struct stat& st) {
  FoundGitDir f;
  f.rel = rel;
  f.kind = S_ISLNK(st.st_mode) ? "symlinked .git" : "gitfile (.git file)";
  f.print = GitFileFingerprint(parent, st);
  return f;
}

std::string QuarantineSuffix(const std::string& session_id) {
  return absl::StrCat(".lazaret-quarantine-", session_id);
}

absl::StatusOr<DirFd> OpenRel(const std::string& root, const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  if (rel.empty() || rel == ".") return dir;
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    LAZ_ASSIGN_OR_RETURN(dir, dir.OpenChild(std::string(part)));
  }
  return dir;
}

absl::StatusOr<std::string> RenameAside(const DirFd& dir, const std::string& from,
                                        const std::string& suffix) {
  struct stat before {};
  const bool have_times = fstat(dir.get(), &before) == 0;
  std::string to;
  for (int i = 1; i <= 100; ++i) {
    to = absl::StrCat(from, suffix, i == 1 ? "" : absl::StrCat("-", i));
    if (renameat2(dir.get(), from.c_str(), dir.get(), to.c_str(), RENAME_NOREPLACE) == 0) {
      if (have_times) {
        const timespec times[2] = {before.st_atim, before.st_mtim};
        (void)futimens(dir.get(), times);
      }
      return to;
    }
    if (errno != EEXIST) return ErrnoStatus(absl::StrCat("renaming ", from), errno);
  }
  return absl::AlreadyExistsError(absl::StrCat("no free quarantine name for ", from));
}

void Neutralise(const ScanRoot& root, const FoundGitDir& f, const std::string& suffix,
                PlantedRepository* out) {
  const std::string path = Join(root.path, f.rel);
  const std::string parent_rel = f.rel == "." ? "" : Dirname(f.rel);
  const std::string base = Basename(f.rel);
  const bool rename_entry = !f.layout || base == ".git";
  std::vector<std::string> undo;  // shell commands, in the order they run
  if (f.layout) {
    absl::StatusOr<DirFd> dir = OpenRel(root.path, f.rel);
    if (!dir.ok()) {
      out->error = std::string(dir.status().message());
      return;
    }
    absl::StatusOr<std::string> head = RenameAside(*dir, "HEAD", suffix);
    if (!head.ok()) {
      out->error = std::string(head.status().message());
      return;
    }
    undo.push_back(absl::StrCat("mv ", ShellQuote(absl::StrCat(path, "/", *head)), " ",
                                ShellQuote(absl::StrCat(path, "/HEAD"))));
  }
  std::string now_at = path;
  if (rename_entry) {
    absl::StatusOr<DirFd> parent = OpenRel(root.path, parent_rel);
    absl::StatusOr<std::string> to =
        parent.ok() ? RenameAside(*parent, base, suffix) : parent.status();
    if (!to.ok()) {
      out->error = std::string(to.status().message());
      if (undo.empty()) return;
    } else {
      now_at = Join(root.path, parent_rel.empty() ? *to : absl::StrCat(parent_rel, "/", *to));
      // The entry comes back first, then its HEAD (whose path names it).
      undo.insert(undo.begin(), absl::StrCat("mv ", ShellQuote(now_at), " ", ShellQuote(path)));
    }
  }
  out->neutralised = true;
  out->now_at = now_at;
  out->restore = absl::StrJoin(undo, " && ");
  if (f.layout) {
    out->inspect = absl::StrCat("cat ", ShellQuote(now_at + "/config"), "; ls -la ",
                                ShellQuote(now_at + "/hooks"));
  } else {
    out->inspect = absl::StrCat("ls -la ", ShellQuote(now_at), "; cat ", ShellQuote(now_at));
  }
}

}  // namespace lazaret::cli::workspace
