#include "clients/lazaret/gitshadow/plan.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "clients/lazaret/gitshadow/git.h"
#include "clients/lazaret/gitshadow/refs.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"

namespace lazaret::cli::gitshadow {
namespace {

// Files in the session's ref directory looked at per write-back: its own
// branch is read by path; the rest is only reported (never imported).
constexpr size_t kMaxRefFilesConsidered = 1000;
// Lines about refs the session may not move, per write-back.
constexpr size_t kMaxStrayLines = 20;
// Other refs below refs/heads/lazaret/ bound read-only into one sandbox.
constexpr size_t kMaxProtectedEntries = 256;
// Refused packs remembered per repository state.
constexpr size_t kMaxRejectedPacks = 1000;
constexpr uint64_t kMaxPackedRefsBytes = 256ull << 20;
constexpr size_t kMaxSubmodules = 1000;
constexpr int kMaxSubmoduleDepth = 8;

// The repository a workspace belongs to, as host git reports it, every path
// canonical. Only InspectRepo makes one.
struct CheckedRepo {
  std::string top;         // the work tree's top directory
  std::string git_dir;     // this work tree's git dir (per-worktree for a linked worktree)
  std::string common_dir;  // GIT_COMMON_DIR: objects, refs, config, hooks
  std::string index;       // this work tree's index file (may not exist yet)
  std::string object_format;
  size_t hex_length = 40;
  bool linked() const { return git_dir != common_dir; }
};

enum class RepoKind { kNone, kSubdirectory, kRepo };

struct Inspection {
  RepoKind kind = RepoKind::kNone;
  CheckedRepo repo;  // kRepo and kSubdirectory (then `top` is the containing top)
};

// The per-repository state directory: <state_dir>/<key>. Lazaret creates it;
// the sandbox sees objects/, refs/, logs/ and session/ (read-write binds,
// swept before host git reads anything from them) and, in worktree mode,
// its worktree. The rest (repo, base, lock, import/, dotgit) only Lazaret
// ever writes.
struct RepoState {
  std::string dir;
  std::string objects() const { return dir + "/objects"; }  // S
  std::string refs() const { return dir + "/refs"; }        // refs/heads/lazaret
  std::string logs() const { return dir + "/logs"; }        // logs/refs/heads/lazaret
  std::string import() const { return dir + "/import"; }    // R, a private bare repo
  std::string session() const { return dir + "/session"; }  // packed-refs, index copy
  std::string dotgit() const { return dir + "/dotgit"; }    // linked worktrees
  std::string worktrees() const { return dir + "/worktrees"; }
};

// An initialized, absorbed submodule: its .git file in the work tree, pinned
// read-only inside the sandbox.
struct Submodule {
  std::string path;      // relative to the work tree top
  std::string git_file;  // absolute host path of <top>/<path>/.git
};

// Refs relative to refs/heads/lazaret/, name -> object id.
using RefMap = std::map<std::string, std::string>;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out = absl::StrSplit(text, '\n');
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

absl::StatusOr<std::string> CanonicalPath(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) {
    return ErrnoStatus(absl::StrCat("resolving ", path), errno);
  }
  return std::string(buf);
}

bool IsDirectoryPath(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsRegularFilePath(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

// Paths end up in podman arguments (`-v a:b:ro`, `--mount type=bind,src=...`)
// and in the developer's terminal. Refuse what cannot be expressed there
// unambiguously rather than quote it.
absl::Status CheckMountablePath(const std::string& path, const std::string& what) {
  for (char c : path) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == ',' || c == ':') {
      return absl::FailedPreconditionError(absl::StrCat(
          what, " '", absl::CHexEscape(path),
          "' contains a comma, colon or control character, which Lazaret cannot mount"));
    }
  }
  return absl::OkStatus();
}

std::string RepoKey(const std::string& common_dir) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : common_dir) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", h);
}

absl::StatusOr<Inspection> InspectRepo(const std::string& dir) {
  LAZ_ASSIGN_OR_RETURN(GitResult probe, RunGitRaw(dir,
                                                  {"rev-parse", "--is-bare-repository",
                                                   "--is-inside-git-dir", "--is-inside-work-tree"},
                                                  kGitQueryTimeout));
  if (probe.exit_code != 0) {
    if (absl::StrContains(probe.err, "not a git repository")) return Inspection{};
    return absl::FailedPreconditionError(
        absl::StrCat("cannot inspect the git repository of ", dir, ": ",
                     absl::StripTrailingAsciiWhitespace(probe.err)));
  }
  const std::vector<std::string> flags = Lines(probe.out);
  if (flags.size() != 3) return absl::InternalError("unexpected git rev-parse output");
  if (flags[0] == "true" || flags[1] == "true") {
    return absl::FailedPreconditionError(absl::StrCat(
        dir,
        " is a bare git repository or inside a .git directory. Lazaret will not mount it: the "
        "agent could write its hooks and config. Run lazaret in a working tree instead."));
  }
  if (flags[2] != "true") {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not inside a git work tree"));
  }
  LAZ_ASSIGN_OR_RETURN(
      std::string paths,
      RunGit(dir,
             {"rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir",
              "--git-common-dir", "--git-path", "index", "--show-object-format"},
             kGitQueryTimeout));
  const std::vector<std::string> p = Lines(paths);
  if (p.size() != 5) return absl::InternalError("unexpected git rev-parse output");
  Inspection out;
  CheckedRepo& r = out.repo;
  LAZ_ASSIGN_OR_RETURN(r.top, CanonicalPath(p[0]));
  LAZ_ASSIGN_OR_RETURN(r.git_dir, CanonicalPath(p[1]));
  LAZ_ASSIGN_OR_RETURN(r.common_dir, CanonicalPath(p[2]));
  r.index = p[3];
  r.object_format = p[4];
  const auto len = ObjectIdLength(r.object_format);
  if (!len) {
    return absl::FailedPreconditionError(
        absl::StrCat("unsupported git object format '", r.object_format, "'"));
  }
  r.hex_length = *len;
  LAZ_ASSIGN_OR_RETURN(std::string canonical_dir, CanonicalPath(dir));
  out.kind = canonical_dir == r.top ? RepoKind::kRepo : RepoKind::kSubdirectory;
  return out;
}

// Refuses host repositories whose layout the shadow cannot present safely.
absl::Status CheckRepoLayout(const CheckedRepo& repo) {
  if (PathExists(repo.common_dir + "/objects/info/alternates") ||
      PathExists(repo.common_dir + "/objects/info/http-alternates")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the repository ", repo.common_dir,
        " borrows objects from another repository (objects/info/alternates), which the sandbox "
        "cannot see. Run `git repack -a -d` and remove objects/info/alternates to use it with "
        "Lazaret."));
  }
  if (!IsDirectoryPath(repo.common_dir + "/refs/heads")) {
    return absl::FailedPreconditionError(
        absl::StrCat(repo.common_dir, "/refs/heads is not a directory"));
  }
  for (const auto& [path, what] : std::vector<std::pair<std::string, std::string>>{
           {repo.top, "repository path"}, {repo.common_dir, "git directory"}}) {
    LAZ_RETURN_IF_ERROR(CheckMountablePath(path, what));
  }
  return absl::OkStatus();
}

// Every host ref at or below refs/heads/lazaret. A branch named exactly
// `lazaret` would collide with the agent namespace mount.
absl::StatusOr<RefMap> HostAgentRefs(const std::string& common_dir) {
  LAZ_ASSIGN_OR_RETURN(std::string out,
                       RunGit(common_dir,
                              {absl::StrCat("--git-dir=", common_dir), "for-each-ref",
                               "--format=%(objectname) %(refname)", "refs/heads/lazaret"},
                              kGitQueryTimeout));
  RefMap refs;
  for (const auto& line : Lines(out)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string refname = line.substr(space + 1);
    if (refname == "refs/heads/lazaret") {
      return absl::FailedPreconditionError(
          "this repository has a branch named 'lazaret', which collides with the agent branch "
          "namespace refs/heads/lazaret/. Rename it (git branch -m lazaret <new-name>) to use "
          "Lazaret here.");
    }
    if (!absl::StartsWith(refname, kAgentRefPrefix)) continue;
    refs[refname.substr(sizeof(kAgentRefPrefix) - 1)] = line.substr(0, space);
  }
  return refs;
}

// mkdir -p with mode 0700 for the parents of a Lazaret-owned directory.
absl::Status MakeParents(const std::string& path) {
  for (size_t pos = 1; (pos = path.find('/', pos)) != std::string::npos; ++pos) {
    const std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating ", prefix), errno);
    }
  }
  return absl::OkStatus();
}

// Creates `name` in `dir` if missing (never following a symlink).
absl::StatusOr<DirFd> EnsureDir(const DirFd& dir, const std::string& name) {
  if (mkdirat(dir.get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("creating ", name), errno);
  }
  return dir.OpenOwnChild(name);
}

// Creates every directory of the relative path `rel` below `root` and
// returns the last one; a non-directory in the way is removed.
absl::StatusOr<DirFd> EnsureDirPath(const std::string& root, const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  if (rel.empty()) return dir;
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    const std::string name(part);
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
      LAZ_RETURN_IF_ERROR(RemoveTreeAt(dir, name));
    }
    LAZ_ASSIGN_OR_RETURN(dir, EnsureDir(dir, name));
  }
  return dir;
}

// Writes a loose ref file `rel` (relative to `root`) holding `oid`.
absl::Status WriteRefFile(const std::string& root, const std::string& rel, const std::string& oid) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, EnsureDirPath(root, Dirname(rel)));
  const std::string name = Basename(rel);
  struct stat st {};
  if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
    LAZ_RETURN_IF_ERROR(RemoveTreeAt(dir, name));
  }
  return WriteFileAt(dir, name, absl::StrCat(oid, "\n"));
}

absl::Status RemoveRefFile(const std::string& root, const std::string& rel) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(root));
  const std::string parent = Dirname(rel);
  if (!parent.empty()) {
    for (absl::string_view part : absl::StrSplit(parent, '/')) {
      auto child = dir.OpenOwnChild(std::string(part));
      if (!child.ok()) return absl::OkStatus();
      dir = *std::move(child);
    }
  }
  return RemoveTreeAt(dir, Basename(rel));
}

// Ref maps Lazaret keeps in the state directory, "<oid> <name>" per line,
// names relative to refs/heads/lazaret/:
//  - "base": for the session's branch, the value host and sandbox last
//    agreed on. Moved away from its base, it is the agent's work to import;
//    still at its base, it is left to the host.
//  - "visible": the other host refs below refs/heads/lazaret/ as the
//    session saw them at its start (its packed-refs has them too).
absl::StatusOr<RefMap> ReadRefMapFile(const RepoState& state, const std::string& file,
                                      size_t hex_length) {
  RefMap base;
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(state.dir));
  auto text = ReadRegularFileAt(dir, file, 64ull << 20);
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
  return WriteFileAt(dir, file, text, 0600);
}

// An exclusive lock on one repository's state, held while sweeping,
// importing or syncing, so the periodic WriteBack, the final one and
// `lazaret clean` never interleave.
class StateLock {
 public:
  static absl::StatusOr<StateLock> Acquire(const RepoState& state) {
    const std::string path = state.dir + "/lock";
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", path), errno);
    while (flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int err = errno;
        close(fd);
        return ErrnoStatus(absl::StrCat("locking ", path), err);
      }
    }
    return StateLock(fd);
  }
  StateLock(StateLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;
  ~StateLock() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  explicit StateLock(int fd) : fd_(fd) {}
  int fd_;
};

absl::StatusOr<std::shared_ptr<StateLease>> AcquireLease(const RepoState& state,
                                                         const CheckedRepo& repo,
                                                         const std::string& profile) {
  const std::string path = state.dir + "/in-use";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", path), errno);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    close(fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("another Lazaret session of profile '", profile,
                       "' is already using the repository ", repo.top,
                       "; stop it first (lazaret ps, then lazaret stop SESSION) or use another "
                       "profile"));
    }
    return ErrnoStatus(absl::StrCat("locking ", path), err);
  }
  return std::make_shared<StateLease>(fd);
}

std::string SandboxAlternates() { return absl::StrCat(kSandboxGitShadow, "/objects\n"); }

// S/info/alternates must say exactly "the shadow's objects". Anything else
// the sandbox put there is removed (and reported) and ours written again. It
// only matters inside: host git never reads S.
absl::Status EnsureSandboxAlternates(const RepoState& state, std::vector<std::string>* removed) {
  LAZ_ASSIGN_OR_RETURN(DirFd objects, DirFd::Open(state.objects()));
  struct stat st {};
  if (fstatat(objects.get(), "info", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    LAZ_RETURN_IF_ERROR(RemoveTreeAt(objects, "info"));
    if (removed != nullptr) removed->push_back("objects/info: not a directory, removed");
  }
  LAZ_ASSIGN_OR_RETURN(DirFd info, EnsureDir(objects, "info"));
  auto current = ReadRegularFileAt(info, "alternates", 4096);
  if (current.ok() && *current == SandboxAlternates()) return absl::OkStatus();
  if (fstatat(info.get(), "alternates", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    LAZ_RETURN_IF_ERROR(RemoveTreeAt(info, "alternates"));
    if (removed != nullptr) {
      removed->push_back("objects/info/alternates: changed by the sandbox, replaced");
    }
  }
  return WriteFileAt(info, "alternates", SandboxAlternates());
}

std::string RecordText(const WriteBackTarget& t) {
  return absl::StrCat(t.host_common_dir, "\n", t.object_format, "\n");
}

absl::StatusOr<WriteBackTarget> ReadRecord(const std::string& repo_state_dir) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(repo_state_dir));
  LAZ_ASSIGN_OR_RETURN(std::string text, ReadRegularFileAt(dir, "repo", 8192));
  const std::vector<std::string> lines = Lines(text);
  if (lines.size() != 2 || lines[0].empty() || lines[0][0] != '/' || !ObjectIdLength(lines[1])) {
    return absl::DataLossError(absl::StrCat(repo_state_dir, "/repo is malformed"));
  }
  return WriteBackTarget{lines[0], repo_state_dir, lines[1]};
}

absl::Status MakeDirs(const std::string& root, const std::vector<std::string>& rels) {
  for (const auto& rel : rels) LAZ_RETURN_IF_ERROR(EnsureDirPath(root, rel).status());
  return absl::OkStatus();
}

// Creates <state_dir>/<key>/ and what is in it, and records which host
// repository it belongs to.
absl::StatusOr<RepoState> PrepareRepoState(const std::string& state_dir, const CheckedRepo& repo) {
  if (state_dir.empty() || state_dir[0] != '/') {
    return absl::InvalidArgumentError("the Git Shadow state directory must be an absolute path");
  }
  LAZ_RETURN_IF_ERROR(CheckMountablePath(state_dir, "state directory"));
  LAZ_RETURN_IF_ERROR(MakeParents(state_dir));
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
    LAZ_RETURN_IF_ERROR(WriteFileAt(dir, "repo", RecordText(target), 0600));
  }
  LAZ_RETURN_IF_ERROR(
      MakeDirs(state.dir, {"objects", "refs", "logs", "session", "import/objects/info",
                           "import/refs/heads/lazaret", "import/refs/tags"}));
  LAZ_RETURN_IF_ERROR(EnsureSandboxAlternates(state, nullptr));
  // R: a bare repository only Lazaret writes. Its alternates point at the
  // host's own objects so upload-pack can walk from agent commits to host
  // ones; its objects/ is T, the copy of what the sandbox wrote.
  LAZ_ASSIGN_OR_RETURN(DirFd import, DirFd::Open(state.import()));
  LAZ_RETURN_IF_ERROR(WriteFileAt(import, "HEAD", "ref: refs/heads/lazaret/import\n"));
  LAZ_RETURN_IF_ERROR(WriteFileAt(
      import, "config",
      repo.object_format == "sha1"
          ? "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
          : absl::StrCat("[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n"
                         "\tobjectformat = ",
                         repo.object_format, "\n")));
  LAZ_ASSIGN_OR_RETURN(DirFd import_info, DirFd::Open(state.import() + "/objects/info"));
  LAZ_RETURN_IF_ERROR(
      WriteFileAt(import_info, "alternates", absl::StrCat(repo.common_dir, "/objects\n")));
  return state;
}

struct ImportOutcome {
  // Agent-moved refs still only in the sandbox state, name -> object id.
  RefMap unimported;
};

// Small files of Lazaret's own in the state directory (never mounted into
// the sandbox): one entry per line.
absl::StatusOr<std::vector<std::string>> ReadStateLines(const RepoState& state,
                                                        const std::string& name) {
  LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(state.dir));
  auto text = ReadRegularFileAt(dir, name, 16ull << 20);
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
  return WriteFileAt(dir, name, text, 0600);
}

// The session's own branch below refs/heads/lazaret/ ("agent-alpha"), as
// the last plan recorded it. Empty for state from before branches were
// recorded: then nothing is imported.
absl::StatusOr<std::string> ReadOwnBranch(const RepoState& state) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadStateLines(state, "branch"));
  if (lines.empty()) return std::string();
  if (lines.size() != 1 || !IsValidRefName(absl::StrCat(kAgentRefPrefix, lines[0]))) {
    return absl::DataLossError(absl::StrCat(state.dir, "/branch is malformed"));
  }
  return lines[0];
}

// An import that failed, remembered so that the same work is not redone
// every tick: the refs it tried, how often it failed, and when it may be
// tried again (wall clock, seconds).
struct ImportFailure {
  std::string key;
  int64_t count = 0;
  int64_t retry_after = 0;
  std::string message;
};

absl::StatusOr<ImportFailure> ReadImportFailure(const RepoState& state) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadStateLines(state, "import-failure"));
  ImportFailure f;
  if (lines.size() != 4 || !absl::SimpleAtoi(lines[1], &f.count) ||
      !absl::SimpleAtoi(lines[2], &f.retry_after)) {
    return f;  // none (or unreadable: then simply retried)
  }
  if (!absl::CUnescape(lines[3], &f.message)) return ImportFailure{};
  f.key = lines[0];
  return f;
}

absl::Status WriteImportFailure(const RepoState& state, const ImportFailure& f) {
  if (f.key.empty()) {
    LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(state.dir));
    return RemoveTreeAt(dir, "import-failure");
  }
  return WriteStateLines(
      state, "import-failure",
      {f.key, absl::StrCat(f.count), absl::StrCat(f.retry_after), absl::CEscape(f.message)});
}

}  // namespace

int64_t ImportBackoffSeconds(int64_t failures) {
  if (failures <= 0) return 0;
  int64_t s = kFirstBackoffSeconds;
  for (int64_t i = 1; i < failures && s < kMaxBackoffSeconds; ++i) s *= 2;
  return std::min(s, kMaxBackoffSeconds);
}

namespace {

// Why ImportLocked may skip the fetch: the same refs failed to import
// before, nothing in the object store changed since, and the backoff has
// not run out (the final write-back of a session retries once more, unless
// the same import already failed kFinalRetryLimit times).
bool ShouldSkipFetch(const ImportFailure& last, const std::string& key, bool objects_changed,
                     bool final_attempt, int64_t now) {
  if (last.key != key || objects_changed) return false;
  if (final_attempt) return last.count >= kFinalRetryLimit;
  // A retry_after far in the future is a clock that went back: ignore it.
  return now < last.retry_after && last.retry_after - now <= kMaxBackoffSeconds;
}

// Sweep, validate, decide and fetch. The caller holds the StateLock.
absl::StatusOr<ImportOutcome> ImportLocked(const WriteBackTarget& target, const RepoState& state,
                                           const WriteBackOptions& options,
                                           WriteBackReport* report) {
  const size_t hex_length = *ObjectIdLength(target.object_format);
  ImportOutcome outcome;
  const WalkLimits walk;
  // 1. Sweep everything the sandbox can write.
  std::vector<std::string> removed_objects, removed_refs, removed_logs;
  LAZ_RETURN_IF_ERROR(SweepTree(
      state.objects(),
      [hex_length](const std::vector<std::string>& rel, EntryKind kind) {
        return ClassifyObjectStoreEntry(hex_length, rel, kind);
      },
      walk, &removed_objects));
  LAZ_RETURN_IF_ERROR(SweepTree(state.refs(), ClassifyRefTreeEntry, walk, &removed_refs));
  LAZ_RETURN_IF_ERROR(SweepTree(state.logs(), ClassifyRefTreeEntry, walk, &removed_logs));
  std::vector<std::string> removed_session;
  LAZ_RETURN_IF_ERROR(SweepTree(state.session(), ClassifySessionEntry, walk, &removed_session));
  for (auto& r : removed_session) report->removed.push_back(absl::StrCat("session/", r));
  for (auto& r : removed_objects) report->removed.push_back(absl::StrCat("objects/", r));
  for (auto& r : removed_refs) report->removed.push_back(absl::StrCat("refs/", r));
  for (auto& r : removed_logs) report->removed.push_back(absl::StrCat("logs/", r));
  LAZ_RETURN_IF_ERROR(EnsureSandboxAlternates(state, &report->removed));

  // 2. The session's own branch - the only ref it may move - holding exactly
  // one object id. Read by its path, so no number of other files can hide it.
  LAZ_ASSIGN_OR_RETURN(const std::string own, ReadOwnBranch(state));
  RefMap agent;
  if (!own.empty()) {
    auto loose = ReadRefFileAt(state.refs(), own);
    std::optional<std::string> oid;
    if (loose.ok() && loose->has_value()) oid = ParseLooseRef(**loose, hex_length);
    if (!loose.ok() || (loose->has_value() && !oid)) {
      report->rejected.push_back(absl::StrCat(
          "lazaret/", own, ": not exactly one object id",
          loose.ok() ? "" : absl::StrCat(" (", loose.status().message(), ")"), "; removed"));
      LAZ_RETURN_IF_ERROR(RemoveRefFile(state.refs(), own));
    } else if (oid) {
      agent[own] = *oid;
    }
  }
  // Every other ref the sandbox created or moved: never imported, reported.
  // The refs of other sessions and of the developer are read-only binds
  // inside (see SyncStateFromHost), so what is here was made inside.
  LAZ_ASSIGN_OR_RETURN(const std::vector<std::string> protected_entries,
                       ReadStateLines(state, "protected"));
  LAZ_ASSIGN_OR_RETURN(const RefMap visible, ReadRefMapFile(state, "visible", hex_length));
  std::vector<std::string> strays;
  auto is_protected = [&](const std::string& name) {
    for (const auto& e : protected_entries) {
      if (IsAtOrBelow(name, e)) return true;
    }
    return false;
  };
  bool truncated = false;
  LAZ_ASSIGN_OR_RETURN(std::vector<RefFile> files,
                       ListRefFiles(state.refs(), kMaxRefFilesConsidered, &truncated));
  for (const auto& f : files) {
    if (f.name == own || is_protected(f.name)) continue;
    strays.push_back(absl::CHexEscape(f.name));
  }
  // Agent refs that git moved into the session's packed-refs (`git
  // pack-refs`, or a loose ref deleted while a packed one remains). A loose
  // ref wins, as it does for git.
  {
    LAZ_ASSIGN_OR_RETURN(DirFd session, DirFd::Open(state.session()));
    auto packed = ReadRegularFileAt(session, "packed-refs", kMaxPackedRefsBytes);
    if (packed.ok()) {
      for (const auto& [name, oid] : PackedAgentRefs(*packed, hex_length)) {
        if (name == own) {
          agent.emplace(name, oid);
          continue;
        }
        auto v = visible.find(name);
        if (v == visible.end() || v->second != oid) {
          strays.push_back(absl::StrCat(name, " (packed)"));
        }
      }
    } else if (!absl::IsNotFound(packed.status())) {
      report->rejected.push_back(absl::StrCat("session packed-refs: ", packed.status().message()));
    }
  }
  // Reported so that the same refs give the same lines every time (the
  // runner prints each distinct line once): a few by name, more as one
  // fixed line - a count would change with every ref the agent adds.
  const std::string own_name = own.empty() ? "none" : absl::StrCat("lazaret/", own);
  if (truncated || strays.size() > kMaxStrayLines) {
    report->rejected.push_back(absl::StrCat(
        "more than ", truncated ? kMaxRefFilesConsidered : kMaxStrayLines, " refs other than ",
        own_name, " were made or moved inside; none is imported"));
  } else {
    std::sort(strays.begin(), strays.end());
    for (const auto& name : strays) {
      report->rejected.push_back(absl::StrCat("lazaret/", name, ": this session may move only ",
                                              own_name, "; not imported"));
    }
  }

  // 3. Decide against the host's value and the last agreed base.
  LAZ_ASSIGN_OR_RETURN(RefMap host, HostAgentRefs(target.host_common_dir));
  LAZ_ASSIGN_OR_RETURN(RefMap base, ReadRefMapFile(state, "base", hex_length));
  struct Import {
    std::string source;  // name in the sandbox
    std::string dest;    // name on the host
    std::string oid;
  };
  std::vector<Import> imports;
  auto value = [](const RefMap& m, const std::string& k) -> std::string {
    auto it = m.find(k);
    return it == m.end() ? "" : it->second;
  };
  bool base_changed = false;
  for (const auto& [name, oid] : agent) {
    const std::string h = value(host, name), b = value(base, name);
    if (h == oid) {
      if (b != oid) {
        base[name] = oid;
        base_changed = true;
      }
      continue;
    }
    if (b == oid) continue;  // the agent left it alone; the host moved it
    if (h == b) {
      imports.push_back({name, name, oid});
      continue;
    }
    // Both sides moved it: keep the developer's, bring the agent's in
    // beside it.
    const std::string rescue = absl::StrCat(name, "-sandbox-", oid.substr(0, 12));
    if (value(host, rescue) == oid) continue;
    imports.push_back({name, rescue, oid});
    report->conflicts.push_back(absl::StrCat("lazaret/", name, " moved on the host (", h,
                                             ") and in the sandbox (", oid,
                                             "); the sandbox's is imported as lazaret/", rescue));
  }
  if (imports.empty()) {
    if (base_changed) LAZ_RETURN_IF_ERROR(WriteRefMapFile(state, "base", base));
    return outcome;
  }
  for (const auto& i : imports) outcome.unimported[i.source] = i.oid;

  // 4. Copy the sandbox's object files into T, R's own object directory,
  // except packs index-pack refused before and unchanged since.
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> rejected_lines,
                       ReadStateLines(state, "rejected-packs"));
  std::set<std::string> rejected_packs(rejected_lines.begin(), rejected_lines.end());
  MirrorLimits mirror_limits;
  mirror_limits.skip_packs = &rejected_packs;
  if (absl::Status s = MirrorObjectFiles(state.objects(), state.import() + "/objects", hex_length,
                                         mirror_limits, &report->mirror);
      !s.ok()) {
    report->import_status = s;
    return outcome;
  }
  const bool objects_changed = report->mirror.files_copied != 0 ||
                               report->mirror.files_removed != 0 ||
                               !report->mirror.packs_to_index.empty();
  // Packs get their index from `git index-pack` - the code git hardens for
  // packs from strangers - never from the sandbox.
  // All of them share one time budget per write-back, so many slow packs
  // cost one budget per tick, not one deadline each; a pack cut short by
  // the budget (rather than by its own full deadline) is indexed next time.
  bool rejected_changed = false;
  bool out_of_time = false;
  const auto index_end = std::chrono::steady_clock::now() + options.index_budget;
  for (const auto& pack : report->mirror.packs_to_index) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        index_end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out_of_time = true;
      break;
    }
    const std::chrono::milliseconds deadline = std::min(left, kGitImportTimeout);
    const std::string path = absl::StrCat(state.import(), "/objects/", pack);
    absl::StatusOr<GitResult> indexed = RunGitRaw(
        state.import(), {absl::StrCat("--git-dir=", state.import()), "index-pack", path}, deadline);
    if (indexed.ok() && indexed->exit_code == 0) continue;
    if (absl::IsDeadlineExceeded(indexed.status()) && deadline < kGitImportTimeout) {
      out_of_time = true;
      unlink(path.c_str());  // copied again, and indexed from the start, next time
      break;
    }
    const std::string why = indexed.ok()
                                ? std::string(absl::StripTrailingAsciiWhitespace(indexed->err))
                                : std::string(indexed.status().message());
    report->rejected.push_back(
        absl::StrCat("objects/", pack, ": not a valid pack (", why, "); not imported"));
    unlink(path.c_str());
    // Remember this version of the file, so it is neither copied nor
    // indexed again.
    auto src = DirFd::Open(state.objects() + "/pack");
    const std::optional<std::string> fp =
        src.ok() ? RegularFileFingerprint(*src, Basename(pack)) : std::nullopt;
    if (fp) {
      rejected_lines.push_back(absl::StrCat(pack, " ", *fp));
      rejected_changed = true;
    }
  }
  if (rejected_changed) {
    if (rejected_lines.size() > kMaxRejectedPacks) {
      rejected_lines.erase(rejected_lines.begin(),
                           rejected_lines.end() - static_cast<ptrdiff_t>(kMaxRejectedPacks));
    }
    LAZ_RETURN_IF_ERROR(WriteStateLines(state, "rejected-packs", rejected_lines));
  }

  if (out_of_time) {
    report->import_status = absl::DeadlineExceededError(absl::StrCat(
        "indexing the sandbox's packs took longer than ", options.index_budget.count() / 1000,
        " s; the rest is indexed at the next write-back"));
    return outcome;
  }

  // 5. The same import failed before and nothing changed: do not fetch
  // again until the backoff runs out.
  std::string key;
  for (const auto& i : imports) absl::StrAppend(&key, i.source, ":", i.dest, ":", i.oid, ";");
  LAZ_ASSIGN_OR_RETURN(ImportFailure last, ReadImportFailure(state));
  const int64_t now = time(nullptr);
  if (ShouldSkipFetch(last, key, objects_changed, options.final_attempt, now)) {
    report->backed_off = true;
    report->import_status = absl::FailedPreconditionError(last.message);
    return outcome;
  }

  // 6. R's refs: exactly the refs to import.
  {
    LAZ_ASSIGN_OR_RETURN(DirFd heads, DirFd::Open(state.import() + "/refs/heads"));
    LAZ_RETURN_IF_ERROR(RemoveTreeAt(heads, "lazaret"));
    LAZ_RETURN_IF_ERROR(EnsureDir(heads, "lazaret").status());
  }
  const std::vector<std::string> args = {absl::StrCat("--git-dir=", target.host_common_dir),
                                         "-c",
                                         "fetch.fsckObjects=true",
                                         "-c",
                                         "transfer.fsckObjects=true",
                                         "-c",
                                         "protocol.file.allow=always",
                                         "-c",
                                         "gc.auto=0",
                                         "-c",
                                         "maintenance.auto=false",
                                         "-c",
                                         "fetch.writeCommitGraph=false",
                                         "fetch",
                                         "--quiet",
                                         "--no-tags",
                                         "--no-write-fetch-head",
                                         "--no-recurse-submodules",
                                         "--no-auto-maintenance",
                                         "--no-show-forced-updates",
                                         "--stdin",
                                         state.import()};
  // Refspecs on stdin: the command line stays the same size whatever the
  // number of refs.
  std::string refspecs;
  for (const auto& i : imports) {
    LAZ_RETURN_IF_ERROR(WriteRefFile(state.import() + "/refs/heads/lazaret", i.source, i.oid));
    absl::StrAppend(&refspecs, "+", kAgentRefPrefix, i.source, ":", kAgentRefPrefix, i.dest, "\n");
  }
  // 7. Host git fetches from R: hooks off, fsck on every object.
  absl::StatusOr<GitResult> fetch =
      RunGitRaw(target.host_common_dir, args, kGitImportTimeout, &refspecs);
  report->fetched = true;
  if (!fetch.ok()) {
    report->import_status = absl::FailedPreconditionError(
        absl::StrCat("importing the agent's refs failed: ", fetch.status().message()));
  } else if (fetch->exit_code != 0) {
    report->import_status = absl::FailedPreconditionError(absl::StrCat(
        "importing the agent's refs failed: ", absl::StripTrailingAsciiWhitespace(fetch->err)));
  }
  LAZ_ASSIGN_OR_RETURN(RefMap after, HostAgentRefs(target.host_common_dir));
  for (const auto& i : imports) {
    if (value(after, i.dest) != i.oid) continue;
    report->imported.push_back(
        absl::StrCat("lazaret/", i.dest, " ",
                     value(host, i.dest).empty() ? "(new)" : value(host, i.dest), " -> ", i.oid));
    outcome.unimported.erase(i.source);
    if (i.source == i.dest) base[i.source] = i.oid;
  }
  LAZ_RETURN_IF_ERROR(WriteRefMapFile(state, "base", base));
  if (!report->import_status.ok()) {
    ImportFailure failure;
    failure.key = key;
    failure.count = last.key == key ? last.count + 1 : 1;
    failure.retry_after = now + ImportBackoffSeconds(failure.count);
    failure.message = std::string(report->import_status.message());
    LAZ_RETURN_IF_ERROR(WriteImportFailure(state, failure));
  } else if (!last.key.empty()) {
    LAZ_RETURN_IF_ERROR(WriteImportFailure(state, ImportFailure{}));
  }
  return outcome;
}

// Host is the truth at session start. The sandbox's writable ref directory
// (mounted at refs/heads/lazaret/) gets:
//  - the session's own branch at the host's value - or, when an import
//    could not bring the last session's work over, at that value, so nothing
//    is lost;
//  - a copy of every other host ref below refs/heads/lazaret/, each inside
//    an entry (ProtectedEntry) the plan binds read-only over itself, so that
//    inside they are visible and cannot be moved, deleted or shadowed
//    (rename onto a mount point fails). At most kMaxProtectedEntries such
//    entries; refs beyond that are visible through the session's
//    packed-refs only, and moving them is dropped at import.
// Records the branch and the protected entries for ImportLocked. Returns the
// protected entries.
absl::StatusOr<std::vector<std::string>> SyncStateFromHost(
    const RepoState& state, const RefMap& host, const CheckedAgentBranch& branch,
    const ImportOutcome& outcome, size_t hex_length, std::vector<std::string>* notices) {
  const std::string own = branch.relative();
  LAZ_ASSIGN_OR_RETURN(RefMap base, ReadRefMapFile(state, "base", hex_length));
  RefMap new_base;
  std::optional<std::string> kept;
  for (const auto& [name, oid] : outcome.unimported) {
    if (name == own) {
      kept = oid;
      if (base.count(name) != 0) new_base[name] = base[name];
      continue;
    }
    // The last session's work is on another branch and only here: starting
    // on this branch would drop it. Nothing is changed; `lazaret clean`
    // retries it on its own branch.
    return absl::FailedPreconditionError(absl::StrCat(
        "the last session of this profile left work on lazaret/", name, " (", oid,
        ") that could not be imported yet; run `lazaret clean` to retry the import, or start "
        "this session with --branch ",
        name, " to continue it (to discard it instead, remove ", state.refs(), "/", name, ")"));
  }
  {
    LAZ_ASSIGN_OR_RETURN(DirFd refs, DirFd::Open(state.refs()));
    LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(refs));
    for (const auto& name : names) LAZ_RETURN_IF_ERROR(RemoveTreeAt(refs, name));
  }
  if (kept) {
    LAZ_RETURN_IF_ERROR(WriteRefFile(state.refs(), own, *kept));
  } else if (auto h = host.find(own); h != host.end()) {
    LAZ_RETURN_IF_ERROR(WriteRefFile(state.refs(), own, h->second));
    new_base[own] = h->second;
  }
  std::set<std::string> entries;
  size_t unprotected = 0;
  for (const auto& [name, oid] : host) {
    if (name == own) continue;
    if (!IsValidRefName(absl::StrCat(kAgentRefPrefix, name))) {
      notices->push_back(absl::StrCat("host branch lazaret/", absl::CHexEscape(name),
                                      " has a name Lazaret does not use; it is not shown inside"));
      continue;
    }
    const std::string entry = ProtectedEntry(name, own);
    if (entry.empty()) continue;
    if (entries.count(entry) == 0) {
      // The entry becomes a mount: a name podman cannot take unambiguously
      // (a comma) stays visible through packed-refs only.
      if (entries.size() >= kMaxProtectedEntries || !CheckMountablePath(entry, "branch").ok()) {
        ++unprotected;
        continue;
      }
      entries.insert(entry);
    }
    LAZ_RETURN_IF_ERROR(WriteRefFile(state.refs(), name, oid));
  }
  if (unprotected != 0) {
    notices->push_back(absl::StrCat(
        unprotected,
        " branches below lazaret/ are visible inside only through packed-refs (more than ",
        kMaxProtectedEntries,
        " groups, or a name with a comma); moving them inside is never imported"));
  }
  LAZ_RETURN_IF_ERROR(WriteStateLines(state, "branch", {own}));
  const std::vector<std::string> out(entries.begin(), entries.end());
  LAZ_RETURN_IF_ERROR(WriteStateLines(state, "protected", out));
  LAZ_RETURN_IF_ERROR(WriteRefMapFile(state, "base", new_base));
  return out;
}

// The commit the workspace's HEAD points at, if it has one.
absl::StatusOr<std::optional<std::string>> HeadCommit(const CheckedRepo& repo) {
  LAZ_ASSIGN_OR_RETURN(GitResult r, RunGitRaw(repo.top,
                                              {absl::StrCat("--git-dir=", repo.git_dir),
                                               "rev-parse", "--verify", "-q", "HEAD^{commit}"},
                                              kGitQueryTimeout));
  if (r.exit_code != 0) return std::optional<std::string>();
  std::string oid(absl::StripTrailingAsciiWhitespace(r.out));
  if (!IsObjectId(oid, repo.hex_length)) return absl::InternalError("unexpected HEAD output");
  return std::optional<std::string>(oid);
}

// Creates the agent branch at the host HEAD commit when missing, or
// fast-forwards it there when it is an ancestor (so, inside, `git status`
// matches the developer's view). Never moves it otherwise.
absl::Status EnsureAgentBranch(const CheckedRepo& repo, const RepoState& state,
                               const CheckedAgentBranch& branch, bool fast_forward, RefMap* host,
                               std::vector<std::string>* notices) {
  LAZ_ASSIGN_OR_RETURN(std::optional<std::string> head, HeadCommit(repo));
  const std::string rel = branch.relative();
  const std::string git_dir = absl::StrCat("--git-dir=", repo.common_dir);
  auto current = host->find(rel);
  if (current == host->end()) {
    if (!head) {
      notices->push_back(absl::StrCat("HEAD has no commit yet; the agent's first commit creates ",
                                      branch.short_name()));
      return absl::OkStatus();
    }
    LAZ_RETURN_IF_ERROR(RunGit(repo.common_dir,
                               {git_dir, "update-ref", "-m", "lazaret: agent branch from HEAD",
                                branch.refname(), *head, std::string(repo.hex_length, '0')},
                               kGitQueryTimeout)
                            .status());
    (*host)[rel] = *head;
  } else if (fast_forward && head && current->second != *head) {
    LAZ_ASSIGN_OR_RETURN(
        GitResult ancestor,
        RunGitRaw(repo.common_dir, {git_dir, "merge-base", "--is-ancestor", current->second, *head},
                  kGitImportTimeout));
    if (ancestor.exit_code == 0) {
      LAZ_RETURN_IF_ERROR(RunGit(repo.common_dir,
                                 {git_dir, "update-ref", "-m", "lazaret: fast-forward to HEAD",
                                  branch.refname(), *head, current->second},
                                 kGitQueryTimeout)
                              .status());
      current->second = *head;
    } else {
      notices->push_back(
          absl::StrCat(branch.short_name(),
                       " has commits your HEAD does not have; inside, `git status` "
                       "compares your working tree with it. Review with `git log HEAD..",
                       branch.short_name(), "` and merge, or reset it to start fresh."));
      return absl::OkStatus();
    }
  } else {
    return absl::OkStatus();
  }
  LAZ_RETURN_IF_ERROR(WriteRefFile(state.refs(), rel, (*host)[rel]));
  LAZ_ASSIGN_OR_RETURN(RefMap base, ReadRefMapFile(state, "base", repo.hex_length));
  base[rel] = (*host)[rel];
  return WriteRefMapFile(state, "base", base);
}

// The mount points refs/heads/lazaret and logs/refs/heads/lazaret must
// exist in the host .git: they are inside read-only binds, where the
// container runtime cannot create them. These empty directories are the
// only thing Lazaret adds to the host .git before a session.
absl::Status EnsureHostMountPoints(const CheckedRepo& repo) {
  std::vector<std::string> dirs = {repo.common_dir + "/refs/heads/lazaret"};
  if (IsDirectoryPath(repo.common_dir + "/logs/refs")) {
    dirs.push_back(repo.common_dir + "/logs/refs/heads");
    dirs.push_back(repo.common_dir + "/logs/refs/heads/lazaret");
  }
  for (const auto& d : dirs) {
    if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(absl::StrCat("creating ", d), errno);
    }
    if (!IsDirectoryPath(d)) {
      return absl::FailedPreconditionError(
          absl::StrCat(d, " is not a directory; Lazaret needs it as the agent ref namespace"));
    }
  }
  return absl::OkStatus();
}

// Gives what host root owns below `dir` (itself included) to uid/gid
// (static_cast<uid_t>(-1) leaves that id), never following a symlink.
absl::Status GiveRootOwnedTree(const DirFd& dir, int depth, uid_t uid, gid_t gid) {
  if (depth > 64) return absl::FailedPreconditionError("ref directories nested too deeply");
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(dir));
  for (const std::string& name : names) {
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const uid_t to_uid = st.st_uid == 0 ? uid : static_cast<uid_t>(-1);
    const gid_t to_gid = st.st_gid == 0 ? gid : static_cast<gid_t>(-1);
    if ((to_uid != static_cast<uid_t>(-1) || to_gid != static_cast<gid_t>(-1)) &&
        fchownat(dir.get(), name.c_str(), to_uid, to_gid, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoStatus(absl::StrCat("giving ", name, " to the repository's owner"), errno);
    }
    if (S_ISDIR(st.st_mode)) {
      LAZ_ASSIGN_OR_RETURN(DirFd child, dir.OpenChild(name));
      LAZ_RETURN_IF_ERROR(GiveRootOwnedTree(child, depth + 1, uid, gid));
    }
  }
  return absl::OkStatus();
}

// Rootful, host git ran as root above (EnsureAgentBranch) and Lazaret made
// the mount points: the agent branch's ref, its reflog and their
// directories would stay host root's in the developer's .git, where the
// developer's git could not move or delete them. They get the owner of the
// common dir, as everything the session writes there does (the workspace
// sweep, docs/operations.md "Rootful file ownership"). No sandbox runs yet,
// so nothing else writes there.
absl::Status GiveAgentRefsToRepoOwner(const CheckedRepo& repo) {
  if (geteuid() != 0) return absl::OkStatus();
  struct stat owner {};
  if (lstat(repo.common_dir.c_str(), &owner) != 0) {
    return ErrnoStatus(absl::StrCat("inspecting ", repo.common_dir), errno);
  }
  const uid_t uid = owner.st_uid != 0 ? owner.st_uid : static_cast<uid_t>(-1);
  const gid_t gid = owner.st_gid != 0 ? owner.st_gid : static_cast<gid_t>(-1);
  if (uid == static_cast<uid_t>(-1) && gid == static_cast<gid_t>(-1)) return absl::OkStatus();
  for (const char* parent : {"refs/heads", "logs/refs/heads"}) {
    const std::string path = absl::StrCat(repo.common_dir, "/", parent);
    if (!IsDirectoryPath(path + "/lazaret")) continue;
    LAZ_ASSIGN_OR_RETURN(DirFd dir, DirFd::Open(path));
    struct stat st {};
    if (fstat(dir.get(), &st) == 0 && (st.st_uid == 0 || st.st_gid == 0) &&
        fchown(dir.get(), st.st_uid == 0 ? uid : static_cast<uid_t>(-1),
               st.st_gid == 0 ? gid : static_cast<gid_t>(-1)) != 0) {
      return ErrnoStatus(absl::StrCat("giving ", path, " to the repository's owner"), errno);
    }
    LAZ_ASSIGN_OR_RETURN(DirFd lazaret, dir.OpenChild("lazaret"));
    if (fstat(lazaret.get(), &st) == 0 && (st.st_uid == 0 || st.st_gid == 0) &&
        fchown(lazaret.get(), st.st_uid == 0 ? uid : static_cast<uid_t>(-1),
               st.st_gid == 0 ? gid : static_cast<gid_t>(-1)) != 0) {
      return ErrnoStatus(absl::StrCat("giving ", path, "/lazaret to the repository's owner"),
                         errno);
    }
    LAZ_RETURN_IF_ERROR(GiveRootOwnedTree(lazaret, 0, uid, gid));
  }
  return absl::OkStatus();
}

// The session directory the sandbox sees read-write at kSandboxGitSession:
//  - packed-refs: every host ref (packed and loose) at session start. The
//    git directory's packed-refs links here rather than into the read-only
//    shadow because git locks packed-refs (resolving the symlink) for every
//    ref deletion - which commit, merge, rebase and `branch -d` all do - and
//    a lock next to a read-only target fails. Loose refs stay live through
//    the read-only refs bind and win over this snapshot; including the
//    loose values means a ref the host packs mid-session does not vanish.
//  - index: a copy of the work tree's index, which the init program copies
//    into the git directory.
// Returns whether there is an index.
absl::StatusOr<bool> WriteSessionFiles(const CheckedRepo& repo, const CheckedRepo& view,
                                       const RepoState& state) {
  LAZ_ASSIGN_OR_RETURN(std::string refs,
                       RunGit(repo.common_dir,
                              {absl::StrCat("--git-dir=", repo.common_dir), "for-each-ref",
                               "--format=%(objectname) %(refname)"},
                              kGitQueryTimeout));
  RefMap sorted;  // bytewise order, as the "sorted" trait requires
  for (const auto& line : Lines(refs)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || !IsObjectId(line.substr(0, space), repo.hex_length)) continue;
    sorted[line.substr(space + 1)] = line.substr(0, space);
  }
  std::string packed = "# pack-refs with: sorted \n";
  for (const auto& [name, oid] : sorted) absl::StrAppend(&packed, oid, " ", name, "\n");
  LAZ_ASSIGN_OR_RETURN(DirFd session, DirFd::Open(state.session()));
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> old, ListNames(session));
  for (const auto& name : old) LAZ_RETURN_IF_ERROR(RemoveTreeAt(session, name));
  LAZ_RETURN_IF_ERROR(WriteFileAt(session, "packed-refs", packed));
  if (!IsRegularFilePath(view.index)) return false;
  LAZ_ASSIGN_OR_RETURN(DirFd index_dir, DirFd::Open(Dirname(view.index)));
  LAZ_ASSIGN_OR_RETURN(std::string index,
                       ReadRegularFileAt(index_dir, Basename(view.index), 4ull << 30));
  LAZ_RETURN_IF_ERROR(WriteFileAt(session, "index", index));
  return true;
}

// The other refs below lazaret/ exactly as the session's packed-refs (just
// written) shows them, so ImportLocked can tell an edit of that file from
// the snapshot.
absl::Status RecordVisibleRefs(const RepoState& state, const CheckedAgentBranch& branch,
                               size_t hex_length) {
  LAZ_ASSIGN_OR_RETURN(DirFd session, DirFd::Open(state.session()));
  LAZ_ASSIGN_OR_RETURN(std::string packed,
                       ReadRegularFileAt(session, "packed-refs", kMaxPackedRefsBytes));
  RefMap visible = PackedAgentRefs(packed, hex_length);
  visible.erase(branch.relative());
  return WriteRefMapFile(state, "visible", visible);
}

// Gitlinks (mode 160000) in the index of `git_dir`.
absl::StatusOr<std::vector<std::string>> Gitlinks(const std::string& git_dir,
                                                  const std::string& work_tree) {
  LAZ_ASSIGN_OR_RETURN(std::string out, RunGit(work_tree,
                                               {absl::StrCat("--git-dir=", git_dir),
                                                absl::StrCat("--work-tree=", work_tree), "ls-files",
                                                "--stage", "-z"},
                                               kGitQueryTimeout));
  std::vector<std::string> paths;
  for (absl::string_view entry : absl::StrSplit(out, '\0')) {
    if (!absl::StartsWith(entry, "160000 ")) continue;
    const size_t tab = entry.find('\t');
    if (tab != absl::string_view::npos) paths.emplace_back(entry.substr(tab + 1));
  }
  return paths;
}

// Finds initialized submodules below `work_tree` (recursively) and checks
// each is absorbed: its .git is a file pointing into <common>/modules/.
// Anything else is refused - a .git directory inside the working tree (or a
// .git file pointing elsewhere) would give the agent a git directory whose
// config host git reads when it recurses into submodules.
absl::Status FindSubmodules(const CheckedRepo& repo, const std::string& git_dir,
                            const std::string& rel_prefix, int depth, std::vector<Submodule>* out) {
  if (depth > kMaxSubmoduleDepth) {
    return absl::FailedPreconditionError("submodules are nested too deeply");
  }
  const std::string work_tree =
      rel_prefix.empty() ? repo.top : absl::StrCat(repo.top, "/", rel_prefix);
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> links, Gitlinks(git_dir, work_tree));
  const std::string modules = repo.common_dir + "/modules/";
  for (const auto& link : links) {
    const std::string rel = rel_prefix.empty() ? link : absl::StrCat(rel_prefix, "/", link);
    const std::string git_file = absl::StrCat(repo.top, "/", rel, "/.git");
    struct stat st {};
    if (lstat(git_file.c_str(), &st) != 0) continue;  // not initialized
    LAZ_RETURN_IF_ERROR(CheckMountablePath(rel, "submodule path"));
    if (!S_ISREG(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "submodule ", rel, " keeps its git directory inside the working tree (", git_file,
          " is not a file). Run `git submodule absorbgitdirs` to use this repository with "
          "Lazaret."));
    }
    LAZ_ASSIGN_OR_RETURN(DirFd parent, DirFd::Open(absl::StrCat(repo.top, "/", rel)));
    LAZ_ASSIGN_OR_RETURN(std::string contents, ReadRegularFileAt(parent, ".git", 4096));
    std::string target(absl::StripTrailingAsciiWhitespace(contents));
    if (!absl::StartsWith(target, "gitdir: ")) {
      return absl::FailedPreconditionError(absl::StrCat(git_file, " is not a gitdir file"));
    }
    target = target.substr(sizeof("gitdir: ") - 1);
    if (target.empty() || target[0] != '/') target = absl::StrCat(repo.top, "/", rel, "/", target);
    auto resolved = CanonicalPath(target);
    if (!resolved.ok() || !absl::StartsWith(*resolved, modules)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "submodule ", rel, " uses the git directory ", target, ", outside ", modules,
          ". Lazaret supports absorbed submodules of a main working tree only (`git submodule "
          "absorbgitdirs`)."));
    }
    if (out->size() >= kMaxSubmodules) {
      return absl::FailedPreconditionError("too many submodules");
    }
    out->push_back({rel, git_file});
    LAZ_RETURN_IF_ERROR(FindSubmodules(repo, *resolved, rel, depth + 1, out));
  }
  return absl::OkStatus();
}

// "a/b" -> "a%2Fb": one directory name per branch, injective.
std::string EncodeBranchDir(const std::string& short_name) {
  std::string out;
  for (char c : short_name) {
    if (c == '%') {
      out += "%25";
    } else if (c == '/') {
      out += "%2F";
    } else {
      out += c;
    }
  }
  return out;
}

// Worktree mode: a host `git worktree` of the agent branch, owned by Lazaret
// under the state directory, detached at the branch tip (so `git fetch`
// may move the branch while the worktree exists) and locked against
// `git worktree prune`.
absl::StatusOr<CheckedRepo> EnsureAgentWorktree(const CheckedRepo& repo, const RepoState& state,
                                                const CheckedAgentBranch& branch,
                                                const RefMap& host) {
  auto tip = host.find(branch.relative());
  if (tip == host.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--worktree needs a commit to start from, and ", branch.short_name(),
                     " does not exist yet (HEAD has no commit)"));
  }
  LAZ_RETURN_IF_ERROR(MakeDirs(state.dir, {"worktrees"}));
  const std::string dir =
      absl::StrCat(state.worktrees(), "/", EncodeBranchDir(branch.short_name()));
  const std::string git_dir_arg = absl::StrCat("--git-dir=", repo.common_dir);
  if (!PathExists(dir)) {
    LAZ_RETURN_IF_ERROR(
        RunGit(repo.top,
               {git_dir_arg, "worktree", "add", "--quiet", "--detach", "--lock", dir, tip->second},
               kGitCheckoutTimeout)
            .status());
  }
  LAZ_ASSIGN_OR_RETURN(Inspection wt, InspectRepo(dir));
  if (wt.kind != RepoKind::kRepo || wt.repo.common_dir != repo.common_dir || !wt.repo.linked()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is not a worktree of ", repo.common_dir,
                     "; remove it (git worktree remove --force) and run again"));
  }
  LAZ_ASSIGN_OR_RETURN(std::optional<std::string> head, HeadCommit(wt.repo));
  if (head != tip->second) {
    // Bring the worktree's (detached) HEAD and index to the branch tip;
    // its files - the agent's work - stay as they are.
    LAZ_RETURN_IF_ERROR(
        RunGit(dir,
               {absl::StrCat("--git-dir=", wt.repo.git_dir), absl::StrCat("--work-tree=", dir),
                "reset", "--quiet", "--mixed", tip->second},
               kGitCheckoutTimeout)
            .status());
  }
  return wt.repo;
}

void AddBind(std::vector<Mount>* mounts, std::string host, std::string container, bool read_only) {
  mounts->push_back(BindMount{std::move(host), std::move(container), read_only, true});
}

std::vector<EnvSetting> SandboxGitEnv() {
  // Command-line scope config, no file: git in the sandbox trusts the
  // workspace and submodule directories (owned by the developer's uid, not
  // the sandbox's root), never packs refs or expires reflogs (those would
  // write host refs, which are read-only), and does not write info/refs into
  // the read-only shadow.
  const std::vector<std::pair<std::string, std::string>> config = {
      {"safe.directory", "*"},
      {"gc.packRefs", "false"},
      {"gc.reflogExpire", "never"},
      {"gc.reflogExpireUnreachable", "never"},
      {"repack.updateServerInfo", "false"},
  };
  std::vector<EnvSetting> env = {{"GIT_CONFIG_COUNT", absl::StrCat(config.size()), false}};
  for (size_t i = 0; i < config.size(); ++i) {
    env.push_back({absl::StrCat("GIT_CONFIG_KEY_", i), config[i].first, false});
    env.push_back({absl::StrCat("GIT_CONFIG_VALUE_", i), config[i].second, false});
  }
  return env;
}

}  // namespace

StateLease::~StateLease() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<GitShadowPlan> PlanGitShadow(const GitShadowRequest& request) {
  LAZ_ASSIGN_OR_RETURN(CheckedAgentBranch branch,
                       CheckAgentBranch(request.profile, request.branch));
  LAZ_ASSIGN_OR_RETURN(std::string workspace, CanonicalPath(request.workspace_dir));
  if (!IsDirectoryPath(workspace)) {
    return absl::InvalidArgumentError(absl::StrCat(workspace, " is not a directory"));
  }
  GitShadowPlan plan;
  plan.workspace_host_dir = workspace;
  plan.agent_branch = branch.short_name();
  LAZ_ASSIGN_OR_RETURN(Inspection inspection, InspectRepo(workspace));
  if (inspection.kind == RepoKind::kNone) {
    if (request.worktree_mode) {
      return absl::FailedPreconditionError(
          absl::StrCat("--worktree needs a git repository, and ", workspace, " is not in one"));
    }
    return plan;
  }
  if (inspection.kind == RepoKind::kSubdirectory) {
    const std::string message = absl::StrCat(
        workspace, " is inside the git repository ", inspection.repo.top,
        " but not at its top: only this directory is mounted and git does not work inside. Run "
        "lazaret from ",
        inspection.repo.top, " to get the Git Shadow.");
    if (request.worktree_mode) return absl::FailedPreconditionError(message);
    plan.notices.push_back(message);
    return plan;
  }
  const CheckedRepo& repo = inspection.repo;
  LAZ_RETURN_IF_ERROR(CheckRepoLayout(repo));
  LAZ_ASSIGN_OR_RETURN(RepoState state, PrepareRepoState(request.state_dir, repo));
  const WriteBackTarget target{repo.common_dir, state.dir, repo.object_format};

  LAZ_ASSIGN_OR_RETURN(plan.lease, AcquireLease(state, repo, request.profile));
  LAZ_ASSIGN_OR_RETURN(StateLock lock, StateLock::Acquire(state));
  // Anything a previous session left unimported goes to the host first.
  WriteBackReport leftovers;
  LAZ_ASSIGN_OR_RETURN(ImportOutcome outcome,
                       ImportLocked(target, state, WriteBackOptions{}, &leftovers));
  if (!leftovers.import_status.ok()) {
    plan.notices.push_back(absl::StrCat("a previous session's agent refs could not be imported (",
                                        leftovers.import_status.message(),
                                        "); they stay in the sandbox and are retried"));
  }
  for (const auto& c : leftovers.conflicts) plan.notices.push_back(c);
  LAZ_ASSIGN_OR_RETURN(RefMap host, HostAgentRefs(repo.common_dir));
  LAZ_ASSIGN_OR_RETURN(
      const std::vector<std::string> protected_entries,
      SyncStateFromHost(state, host, branch, outcome, repo.hex_length, &plan.notices));
  LAZ_RETURN_IF_ERROR(
      EnsureAgentBranch(repo, state, branch, !request.worktree_mode, &host, &plan.notices));
  LAZ_RETURN_IF_ERROR(EnsureHostMountPoints(repo));
  LAZ_RETURN_IF_ERROR(GiveAgentRefsToRepoOwner(repo));

  // The work tree the sandbox gets, and the git dir whose HEAD/index it uses.
  CheckedRepo view = repo;
  std::vector<Submodule> submodules;
  if (request.worktree_mode) {
    LAZ_ASSIGN_OR_RETURN(view, EnsureAgentWorktree(repo, state, branch, host));
    plan.workspace_host_dir = view.top;
  } else {
    LAZ_RETURN_IF_ERROR(FindSubmodules(repo, repo.git_dir, "", 0, &submodules));
  }

  // Mounts, in order. G is where the git directory is built.
  const std::string g =
      view.linked() ? kSandboxLinkedGitDir : absl::StrCat(kSandboxWorkspace, "/.git");
  std::vector<Mount>& m = plan.mounts;
  if (view.linked()) {
    LAZ_ASSIGN_OR_RETURN(DirFd state_dir, DirFd::Open(state.dir));
    LAZ_RETURN_IF_ERROR(
        WriteFileAt(state_dir, "dotgit", absl::StrCat("gitdir: ", kSandboxLinkedGitDir, "\n")));
    AddBind(&m, state.dotgit(), absl::StrCat(kSandboxWorkspace, "/.git"), true);
  }
  LAZ_ASSIGN_OR_RETURN(const bool has_index, WriteSessionFiles(repo, view, state));
  LAZ_RETURN_IF_ERROR(RecordVisibleRefs(state, branch, repo.hex_length));
  m.push_back(TmpfsMount{g, "0755"});
  AddBind(&m, repo.common_dir, kSandboxGitShadow, true);
  AddBind(&m, state.session(), kSandboxGitSession, false);
  AddBind(&m, repo.common_dir + "/refs", g + "/refs", true);
  AddBind(&m, state.refs(), g + "/refs/heads/lazaret", false);
  // Other sessions' and the developer's refs below lazaret/: read-only over
  // themselves (SyncStateFromHost).
  for (const auto& entry : protected_entries) {
    AddBind(&m, absl::StrCat(state.refs(), "/", entry),
            absl::StrCat(g, "/refs/heads/lazaret/", entry), true);
  }
  if (IsDirectoryPath(repo.common_dir + "/logs/refs")) {
    AddBind(&m, repo.common_dir + "/logs/refs", g + "/logs/refs", true);
  }
  AddBind(&m, state.logs(), g + "/logs/refs/heads/lazaret", false);
  AddBind(&m, state.objects(), g + "/objects", false);
  if (!submodules.empty()) {
    AddBind(&m, repo.common_dir + "/modules", g + "/modules", true);
    for (const auto& s : submodules) {
      AddBind(&m, s.git_file, absl::StrCat(kSandboxWorkspace, "/", s.path, "/.git"), true);
    }
  }

  plan.env = SandboxGitEnv();
  plan.init_args = {absl::StrCat("--git-dir=", g), absl::StrCat("--git-shadow=", kSandboxGitShadow),
                    absl::StrCat("--git-head=", branch.refname())};
  if (has_index) plan.init_args.push_back(absl::StrCat("--git-index=", kSandboxGitIndex));
  plan.init_args.push_back(absl::StrCat("--git-packed-refs=", kSandboxGitPackedRefs));
  for (const char* link : {"config", "info", "shallow"}) {
    plan.init_args.push_back(absl::StrCat("--git-link=", link));
  }
  plan.has_repo = true;
  plan.write_back = target;
  return plan;
}

absl::StatusOr<WriteBackReport> WriteBack(const WriteBackTarget& target,
                                          const WriteBackOptions& options) {
  if (!ObjectIdLength(target.object_format)) {
    return absl::InvalidArgumentError("write-back target has no object format");
  }
  LAZ_ASSIGN_OR_RETURN(WriteBackTarget recorded, ReadRecord(target.repo_state_dir));
  if (recorded.host_common_dir != target.host_common_dir ||
      recorded.object_format != target.object_format) {
    return absl::FailedPreconditionError(absl::StrCat(target.repo_state_dir, " belongs to ",
                                                      recorded.host_common_dir, ", not to ",
                                                      target.host_common_dir));
  }
  if (!IsDirectoryPath(target.host_common_dir)) {
    return absl::NotFoundError(
        absl::StrCat("the repository ", target.host_common_dir, " no longer exists"));
  }
  const RepoState state{target.repo_state_dir};
  LAZ_ASSIGN_OR_RETURN(StateLock lock, StateLock::Acquire(state));
  WriteBackReport report;
  LAZ_RETURN_IF_ERROR(ImportLocked(target, state, options, &report).status());
  return report;
}

absl::StatusOr<std::vector<std::pair<WriteBackTarget, WriteBackReport>>> WriteBackAll(
    const std::string& state_dir) {
  std::vector<std::pair<WriteBackTarget, WriteBackReport>> out;
  auto dir = DirFd::Open(state_dir);
  if (!dir.ok()) {
    if (absl::IsNotFound(dir.status())) return out;
    return dir.status();
  }
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(*dir));
  std::vector<std::string> keys;
  for (const auto& name : names) {
    if (name.size() == 16 && name.find_first_not_of("0123456789abcdef") == std::string::npos) {
      keys.push_back(name);
    }
  }
  for (const auto& key : keys) {
    auto target = ReadRecord(absl::StrCat(state_dir, "/", key));
    if (!target.ok()) continue;
    WriteBackReport report;
    WriteBackOptions options;
    options.final_attempt = true;
    auto r = WriteBack(*target, options);
    if (r.ok()) {
      report = *std::move(r);
    } else {
      report.import_status = r.status();
    }
    out.emplace_back(*target, std::move(report));
  }
  return out;
}

}  // namespace lazaret::cli::gitshadow
