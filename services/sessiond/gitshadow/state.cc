#include "services/sessiond/gitshadow/state.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/file.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"
#include "services/sessiond/gitshadow/git.h"
#include "services/sessiond/gitshadow/sandbox_paths.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::gitshadow {

using fs::DirFd;

namespace {

std::string RepoKey(const std::string& common_dir) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : common_dir) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", h);
}

std::string SandboxAlternates() { return absl::StrCat(kSandboxGitShadow, "/objects\n"); }

std::string RecordText(const WriteBackTarget& t) {
  return absl::StrCat(t.host_common_dir, "\n", t.object_format, "\n");
}

}  // namespace

absl::StatusOr<DirFd> EnsureDirPath(const std::string& root, const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  if (rel.empty()) return dir;
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    const std::string name(part);
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
      LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(dir, name));
    }
    LAZ_ASSIGN_OR_RETURN(dir, fs::MakeOwnDirsAt(dir, name, 0755));
  }
  return dir;
}

absl::Status WriteRefFile(const std::string& root, const std::string& rel, const std::string& oid) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, EnsureDirPath(root, vocab::Dirname(rel)));
  const std::string name = vocab::Basename(rel);
  struct stat st {};
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
    LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(dir, name));
  }
  return fs::WriteFileAtomicAt(dir, name, absl::StrCat(oid, "\n"));
}

absl::Status RemoveRefFile(const std::string& root, const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  const std::string parent = vocab::Dirname(rel);
  if (!parent.empty()) {
    for (absl::string_view part : absl::StrSplit(parent, '/')) {
      auto child = dir.OpenOwnChild(std::string(part));
      if (!child.ok()) return absl::OkStatus();
      dir = *std::move(child);
    }
  }
  return fs::RemoveTreeAt(dir, vocab::Basename(rel));
}

absl::StatusOr<RefMap> ReadRefMapFile(const RepoState& state, const std::string& file,
                                      size_t hex_length) {
  RefMap base;
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(state.dir));
  auto text = fs::ReadRegularFileAt(dir, file, 64ull << 20);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return base;
    return text.status();
  }
  for (const auto& line : Lines(*text)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string oid = line.substr(0, space);
    if (IsObjectId(oid, hex_length)) base[line.substr(space + 1)] = oid;
  }
  return base;
}

absl::Status WriteRefMapFile(const RepoState& state, const std::string& file, const RefMap& refs) {
  std::string text;
  for (const auto& [name, oid] : refs) absl::StrAppend(&text, oid, " ", name, "\n");
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(state.dir));
  return fs::WriteFileAtomicAt(dir, file, text, 0600);
}

absl::StatusOr<std::vector<std::string>> ReadStateLines(const RepoState& state,
                                                        const std::string& name) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(state.dir));
  auto text = fs::ReadRegularFileAt(dir, name, 16ull << 20);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return std::vector<std::string>();
    return text.status();
  }
  return Lines(*text);
}

absl::Status WriteStateLines(const RepoState& state, const std::string& name,
                             const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) absl::StrAppend(&text, l, "\n");
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(state.dir));
  return fs::WriteFileAtomicAt(dir, name, text, 0600);
}

absl::StatusOr<std::string> ReadOwnBranch(const RepoState& state) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadStateLines(state, "branch"));
  if (lines.empty()) return std::string();
  if (lines.size() != 1 || !IsValidRefName(absl::StrCat(kAgentRefPrefix, lines[0]))) {
    return absl::DataLossError(absl::StrCat(state.dir, "/branch is malformed"));
  }
  return lines[0];
}

absl::StatusOr<StateLock> StateLock::Acquire(const RepoState& state) {
  LAZ_ASSIGN_OR_RETURN(fs::FileLock lock, fs::FileLock::Acquire(state.dir + "/lock", {}));
  return StateLock(std::move(lock));
}

absl::StatusOr<std::shared_ptr<StateLease>> AcquireLease(const RepoState& state,
                                                         const CheckedRepo& repo,
                                                         const std::string& profile) {
  fs::LockOptions no_wait;
  no_wait.wait = false;
  absl::StatusOr<fs::FileLock> lock = fs::FileLock::Acquire(state.dir + "/in-use", no_wait);
  if (absl::IsUnavailable(lock.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("another Lazaret session of profile '", profile,
                     "' is already using the repository ", repo.top,
                     "; stop it first (lazaret ps, then lazaret stop SESSION) or use another "
                     "profile"));
  }
  if (!lock.ok()) return lock.status();
  return std::make_shared<StateLease>(*std::move(lock));
}

absl::Status EnsureSandboxAlternates(const RepoState& state, std::vector<std::string>* removed) {
  LAZ_ASSIGN_OR_RETURN(DirFd objects, DirFd::Open(state.objects()));
  struct stat st {};
  if (fstatat(objects.get(), "info", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(objects, "info"));
    if (removed != nullptr) removed->push_back("objects/info: not a directory, removed");
  }
  LAZ_ASSIGN_OR_RETURN(DirFd info, fs::MakeOwnDirsAt(objects, "info", 0755));
  auto current = fs::ReadRegularFileAt(info, "alternates", 4096);
  if (current.ok() && *current == SandboxAlternates()) return absl::OkStatus();
  if (fstatat(info.get(), "alternates", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(info, "alternates"));
    if (removed != nullptr) {
      removed->push_back("objects/info/alternates: changed by the sandbox, replaced");
    }
  }
  return fs::WriteFileAtomicAt(info, "alternates", SandboxAlternates());
}

absl::StatusOr<WriteBackTarget> ReadRecord(const std::string& repo_state_dir) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(repo_state_dir));
  LAZ_ASSIGN_OR_RETURN(std::string text, fs::ReadRegularFileAt(dir, "repo", 8192));
  const std::vector<std::string> lines = Lines(text);
  if (lines.size() != 2 || lines[0].empty() || lines[0][0] != '/' || !ObjectIdLength(lines[1])) {
    return absl::DataLossError(absl::StrCat(repo_state_dir, "/repo is malformed"));
  }
  return WriteBackTarget{lines[0], repo_state_dir, lines[1]};
}

absl::Status EnsureDirPaths(const std::string& root, const std::vector<std::string>& rels) {
  for (const auto& rel : rels) LAZ_RETURN_IF_ERROR(EnsureDirPath(root, rel).status());
  return absl::OkStatus();
}

absl::StatusOr<RepoState> PrepareRepoState(const std::string& state_dir, const CheckedRepo& repo) {
  if (state_dir.empty() || state_dir[0] != '/') {
    return absl::InvalidArgumentError("the Git Shadow state directory must be an absolute path");
  }
  LAZ_RETURN_IF_ERROR(CheckMountablePath(state_dir, "state directory"));
  // mkdir -p, mode 0700, of the parents of a Lazaret-owned directory.
  const std::string parent = vocab::Dirname(state_dir);
  LAZ_RETURN_IF_ERROR(fs::MakeDirs(parent.empty() ? "/" : parent, 0700).status());
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(state_dir).status());
  RepoState state{absl::StrCat(state_dir, "/", RepoKey(repo.common_dir))};
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(state.dir).status());
  const WriteBackTarget target{repo.common_dir, state.dir, repo.object_format};
  if (auto recorded = ReadRecord(state.dir); recorded.ok()) {
    if (recorded->host_common_dir != repo.common_dir ||
        recorded->object_format != repo.object_format) {
      return absl::FailedPreconditionError(absl::StrCat(
          state.dir, " belongs to ", recorded->host_common_dir, ", not to ", repo.common_dir));
    }
  } else {
    LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(state.dir));
    LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(dir, "repo", RecordText(target), 0600));
  }
  LAZ_RETURN_IF_ERROR(
      EnsureDirPaths(state.dir, {"objects", "refs", "logs", "session", "import/objects/info",
                                 "import/refs/heads/lazaret", "import/refs/tags"}));
  LAZ_RETURN_IF_ERROR(EnsureSandboxAlternates(state, nullptr));
  // R: a bare repository only Lazaret writes. Its alternates point at the
  // host's own objects so upload-pack can walk from agent commits to host
  // ones; its objects/ is T, the copy of what the sandbox wrote.
  LAZ_ASSIGN_OR_RETURN(DirFd import, DirFd::Open(state.import()));
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(import, "HEAD", "ref: refs/heads/lazaret/import\n"));
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(
      import, "config",
      repo.object_format == "sha1"
          ? "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
          : absl::StrCat("[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n"
                         "\tobjectformat = ",
                         repo.object_format, "\n")));
  LAZ_ASSIGN_OR_RETURN(DirFd import_info, DirFd::Open(state.import() + "/objects/info"));
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(import_info, "alternates",
                                            absl::StrCat(repo.common_dir, "/objects\n")));
  return state;
}

}  // namespace lazaret::cli::gitshadow
