#include "services/brokerd/planted_check.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/workspace/catalogue.h"
#include "services/vocab/escape.h"
#include "services/vocab/host_path.h"

namespace lazaret::brokerd {
namespace {

using fs::DirFd;
using fs::UniqueFd;

// Beyond these a directory counts as not checked (a finding), so no
// number of entries can hide a planted file.
constexpr size_t kMaxEntriesPerDirectory = 100000;
constexpr size_t kMaxHooks = 4096;
// Entries and levels looked at below a host-tool directory (`.vscode/`).
constexpr size_t kMaxToolTreeEntries = 10000;
constexpr int kMaxToolTreeDepth = 16;
// gitfile -> git directory -> commondir: how many links are followed.
constexpr int kMaxGitLinks = 4;
// The most bytes of a gitfile or commondir file read.
constexpr size_t kMaxLinkFileBytes = 4096;

// The files of a git directory host git takes orders from (what the CLI's
// workspace scan fingerprints), besides every file in hooks/.
constexpr const char* kGitControlFiles[] = {"config", "config.worktree", "commondir", "gitdir",
                                            "hooks"};

std::string Join(absl::string_view rel, absl::string_view name) {
  if (rel.empty()) return std::string(name);
  return absl::StrCat(rel, "/", name);
}

// The path as the agent names it, escaped for a human: printable ASCII
// stays, everything else is escaped (EscapeForDisplay), and every space is
// written \x20 so that a directory named ' ' cannot pass for the one above.
std::string Show(absl::string_view rel) {
  const std::string path = rel.empty() ? std::string(command::kSandboxWorkspace)
                                       : absl::StrCat(command::kSandboxWorkspace, "/", rel);
  return absl::StrCat(
      "'", absl::StrReplaceAll(vocab::EscapeForDisplay(path, nullptr), {{" ", "\\x20"}}), "'");
}

// Opens `path` (relative to `root`) following symlinks only while they stay
// below `root`, as O_PATH.
absl::StatusOr<UniqueFd> OpenBeneath(const DirFd& root, const std::string& path) {
  fs::OpenedBeneath opened =
      fs::OpenBeneath(root.get(), path, O_PATH, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
  if (!opened.fd.valid()) return absl::NotFoundError(absl::StrCat("openat2: errno ", opened.error));
  return std::move(opened.fd);
}

// The host path a descriptor was opened at.
std::optional<std::string> PathOf(int fd) {
  char buf[8192];
  const std::string link = absl::StrCat("/proc/self/fd/", fd);
  const ssize_t n = readlink(link.c_str(), buf, sizeof(buf));
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

// Reads a small regular file `name` in `dir` (never a FIFO or a device:
// O_NONBLOCK, then fstat).
std::optional<std::string> ReadSmallFile(const DirFd& dir, const char* name) {
  UniqueFd fd(openat(dir.get(), name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::string out(kMaxLinkFileBytes, '\0');
  const ssize_t n = pread(fd.get(), out.data(), out.size(), 0);
  if (n < 0) return std::nullopt;
  out.resize(static_cast<size_t>(n));
  return out;
}

class Checker {
 public:
  Checker(const PlantedScope& scope, DirFd root) : scope_(scope), root_(std::move(root)) {}

  // `cwd_rel`: the working directory relative to the workspace ("" for it).
  PlantedReport Run(const std::string& cwd_rel, const std::vector<std::string>& argv, bool is_git);

 private:
  bool Changed(const struct stat& st) const {
    return static_cast<int64_t>(st.st_ctim.tv_sec) >= scope_.session_start_unix;
  }
  void Add(std::string finding) {
    if (seen_.insert(finding).second) findings_.push_back(std::move(finding));
  }
  void Unchecked(absl::string_view rel, absl::string_view why) {
    Add(absl::StrCat(Show(rel), " could not be checked (", why,
                     "); the command may act on what the session planted there"));
  }
  // The directory (relative to the workspace) a path an argument names acts
  // in: the directory itself, or the one holding the file it names.
  // Nothing for a path that does not exist or leaves the workspace.
  std::optional<std::string> DirectoryNamed(const std::string& rel_path);
  void CandidatesOf(const std::string& cwd_rel, absl::string_view word,
                    std::set<std::string>* dirs);
  void CheckDirectory(const std::string& rel);
  void CheckGitDir(const DirFd& gitdir, const std::string& rel, absl::string_view kind, int links);
  // The `.git` entry in `parent` (at `parent_rel`) that is a file or a
  // symlink, `st` its fstatat.
  void CheckGitLink(const DirFd& parent, const std::string& parent_rel, const struct stat& st,
                    int links);
  // Follows a path a gitfile, symlink or commondir names, from `base_rel`.
  void FollowGitPath(const std::string& base_rel, std::string target, absl::string_view kind,
                     int links);
  // Whether anything below `dir` was created or changed in the session (or
  // could not be looked at).
  bool AnyChangedBelow(const DirFd& dir, int depth, size_t* budget) const;

  const PlantedScope& scope_;
  const DirFd root_;
  std::vector<std::string> findings_;
  std::set<std::string> seen_;
  std::set<std::string> git_dirs_checked_;
  bool nested_git_ = false;     // a git directory other than the root's own
  bool names_outside_ = false;  // an argument names a directory outside the workspace
};

std::optional<std::string> Checker::DirectoryNamed(const std::string& rel_path) {
  absl::StatusOr<UniqueFd> fd = OpenBeneath(root_, rel_path);
  if (!fd.ok()) return std::nullopt;
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) return std::nullopt;
  std::optional<std::string> path = PathOf(fd->get());
  if (!path.has_value() || !vocab::IsAtOrUnder(*path, scope_.host_workspace)) {
    Unchecked(rel_path, "its path on the host could not be read");
    return std::nullopt;
  }
  std::string rel = path->size() == scope_.host_workspace.size()
                        ? std::string()
                        : path->substr(scope_.host_workspace.size() + 1);
  if (!S_ISDIR(st.st_mode)) rel = rel.find('/') == std::string::npos ? "" : vocab::Dirname(rel);
  return rel;
}

void Checker::CandidatesOf(const std::string& cwd_rel, absl::string_view word,
                           std::set<std::string>* dirs) {
  // The word, what follows its first '=' (--git-dir=DIR, --prefix=DIR,
  // VAR=DIR), and what follows a one-letter option (-CDIR).
  std::vector<absl::string_view> candidates = {word};
  if (const size_t eq = word.find('='); eq != absl::string_view::npos) {
    candidates.push_back(word.substr(eq + 1));
  }
  if (word.size() > 2 && word[0] == '-' && word[1] != '-') candidates.push_back(word.substr(2));
  for (absl::string_view c : candidates) {
    if (c.empty() || c.find('\0') != absl::string_view::npos) continue;
    std::string rel_path;
    if (c == command::kSandboxWorkspace) {
      rel_path = "";
    } else if (absl::StartsWith(c, absl::StrCat(command::kSandboxWorkspace, "/"))) {
      rel_path = std::string(c.substr(sizeof(command::kSandboxWorkspace)));
    } else if (c[0] == '/') {
      if (!vocab::IsAtOrUnder(c, scope_.host_workspace)) {
        struct stat st {};
        if (stat(std::string(c).c_str(), &st) == 0) names_outside_ = true;
        continue;
      }
      rel_path = c.size() == scope_.host_workspace.size()
                     ? std::string()
                     : std::string(c.substr(scope_.host_workspace.size() + 1));
    } else {
      rel_path = Join(cwd_rel, c);
    }
    // A path below the workspace that resolves outside it (a symlink, or
    // "..") is not followed there.
    if (std::optional<std::string> dir = DirectoryNamed(rel_path)) dirs->insert(*dir);
  }
}

bool Checker::AnyChangedBelow(const DirFd& dir, int depth, size_t* budget) const {
  absl::StatusOr<std::vector<std::string>> names = fs::ListNames(dir);
  if (!names.ok() || depth > kMaxToolTreeDepth) return true;
  for (const std::string& name : *names) {
    if (*budget == 0) return true;
    --*budget;
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (Changed(st)) return true;
    if (S_ISDIR(st.st_mode)) {
      absl::StatusOr<DirFd> child = dir.OpenChild(name);
      if (!child.ok() || AnyChangedBelow(*child, depth + 1, budget)) return true;
    }
  }
  return false;
}

void Checker::CheckGitDir(const DirFd& gitdir, const std::string& rel, absl::string_view kind,
                          int links) {
  if (!git_dirs_checked_.insert(rel).second) return;
  if (!rel.empty() && rel != ".git") nested_git_ = true;
  struct statx sx {};
  if (statx(gitdir.get(), "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) == 0 &&
      (sx.stx_mask & STATX_BTIME) != 0 &&
      static_cast<int64_t>(sx.stx_btime.tv_sec) >= scope_.session_start_unix) {
    Add(absl::StrCat(kind, " created in this session at ", Show(rel),
                     " (its config and hooks can make git run any program)"));
    return;
  }
  std::vector<std::string> changed;
  for (const char* name : kGitControlFiles) {
    struct stat st {};
    if (fstatat(gitdir.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && Changed(st)) {
      changed.push_back(name);
    }
  }
  if (absl::StatusOr<DirFd> hooks = gitdir.OpenChild("hooks"); hooks.ok()) {
    absl::StatusOr<std::vector<std::string>> names = fs::ListNames(*hooks);
    if (!names.ok() || names->size() > kMaxHooks) {
      changed.push_back("hooks/ (not listable)");
    } else {
      for (const std::string& n : *names) {
        struct stat st {};
        if (fstatat(hooks->get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && Changed(st)) {
          changed.push_back(absl::StrCat("hooks/", vocab::EscapeForDisplay(n, nullptr)));
        }
      }
    }
  }
  if (!changed.empty()) {
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    Add(absl::StrCat(kind, " at ", Show(rel), " whose ", absl::StrJoin(changed, ", "),
                     " changed in this session (its config and hooks can make git run any "
                     "program)"));
    return;
  }
  if (links < kMaxGitLinks) {
    if (std::optional<std::string> common = ReadSmallFile(gitdir, "commondir")) {
      FollowGitPath(rel, std::string(absl::StripTrailingAsciiWhitespace(*common)),
                    absl::StrCat("the common git directory of ", Show(rel)), links + 1);
    }
  }
}

void Checker::FollowGitPath(const std::string& base_rel, std::string target, absl::string_view kind,
                            int links) {
  if (target.empty()) return;
  std::string rel_path;
  if (target[0] == '/') {
    // Outside the workspace: a place the sandbox cannot write, not followed.
    if (!vocab::IsAtOrUnder(target, scope_.host_workspace)) return;
    rel_path = target.size() == scope_.host_workspace.size()
                   ? std::string()
                   : target.substr(scope_.host_workspace.size() + 1);
  } else {
    rel_path = Join(base_rel, target);
  }
  absl::StatusOr<UniqueFd> fd = OpenBeneath(root_, rel_path);
  if (!fd.ok()) return;
  struct stat st {};
  if (fstat(fd->get(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
  std::optional<std::string> path = PathOf(fd->get());
  if (!path.has_value() || !vocab::IsAtOrUnder(*path, scope_.host_workspace)) return;
  const std::string rel = path->size() == scope_.host_workspace.size()
                              ? std::string()
                              : path->substr(scope_.host_workspace.size() + 1);
  // Reopened as a directory of its own (O_PATH cannot list).
  const UniqueFd dir(openat(fd->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    Unchecked(rel, "it could not be opened");
    return;
  }
  CheckGitDir(DirFd::Adopt(dup(dir.get())), rel, kind, links);
}

void Checker::CheckGitLink(const DirFd& parent, const std::string& parent_rel,
                           const struct stat& st, int links) {
  const std::string rel = Join(parent_rel, ".git");
  const bool symlink = S_ISLNK(st.st_mode);
  if (Changed(st)) {
    Add(absl::StrCat(symlink ? "a symlinked .git" : "a .git file (gitfile)",
                     " created or changed in this session at ", Show(rel),
                     " (it can point git at any repository, whose config can make git run any "
                     "program)"));
    return;
  }
  std::string target;
  if (symlink) {
    char buf[4096];
    const ssize_t n = readlinkat(parent.get(), ".git", buf, sizeof(buf));
    if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return;
    target.assign(buf, static_cast<size_t>(n));
  } else {
    std::optional<std::string> text = ReadSmallFile(parent, ".git");
    if (!text.has_value()) return;
    absl::string_view t = absl::StripTrailingAsciiWhitespace(*text);
    if (!absl::ConsumePrefix(&t, "gitdir:")) return;
    target = std::string(absl::StripLeadingAsciiWhitespace(t));
  }
  FollowGitPath(parent_rel, std::move(target),
                absl::StrCat("the git directory ", Show(rel), " points to"), links + 1);
}

void Checker::CheckDirectory(const std::string& rel) {
  absl::StatusOr<DirFd> dir = DirFd::OpenTrusted(scope_.host_workspace);
  if (!dir.ok()) {
    Unchecked(rel, dir.status().message());
    return;
  }
  if (!rel.empty()) {
    for (absl::string_view part : absl::StrSplit(rel, '/')) {
      absl::StatusOr<DirFd> child = dir->OpenChild(std::string(part));
      if (!child.ok()) {
        Unchecked(rel, child.status().message());
        return;
      }
      *dir = std::move(*child);
    }
  }
  absl::StatusOr<std::vector<std::string>> names = fs::ListNames(*dir);
  if (!names.ok()) {
    Unchecked(rel, names.status().message());
    return;
  }
  if (names->size() > kMaxEntriesPerDirectory) {
    Unchecked(rel, absl::StrCat("more than ", kMaxEntriesPerDirectory, " entries"));
    return;
  }
  // The directory itself as a git directory (setup.c is_git_directory, taken
  // wider: any HEAD that is not a directory): git's discovery accepts it.
  struct stat st {};
  if (fstatat(dir->get(), "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    struct stat a {
    }, b{};
    const bool objects_refs = fstatat(dir->get(), "objects", &a, AT_SYMLINK_NOFOLLOW) == 0 &&
                              fstatat(dir->get(), "refs", &b, AT_SYMLINK_NOFOLLOW) == 0;
    if (objects_refs || fstatat(dir->get(), "commondir", &a, AT_SYMLINK_NOFOLLOW) == 0) {
      CheckGitDir(*dir, rel, "a git directory (bare repository layout)", 0);
    }
  }
  for (const std::string& name : *names) {
    const bool git = name == ".git";
    const bool tool = workspace::IsHostToolActedOnName(name);
    if (!git && !tool) continue;
    if (fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string crel = Join(rel, name);
    if (git) {
      if (S_ISDIR(st.st_mode)) {
        absl::StatusOr<DirFd> child = dir->OpenChild(name);
        if (!child.ok()) {
          Unchecked(crel, child.status().message());
        } else {
          CheckGitDir(*child, crel, "a git repository", 0);
        }
      } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
        if (!rel.empty()) nested_git_ = true;
        CheckGitLink(*dir, rel, st, 0);
      }
      continue;
    }
    bool changed = Changed(st);
    if (!changed && S_ISDIR(st.st_mode)) {
      size_t budget = kMaxToolTreeEntries;
      absl::StatusOr<DirFd> child = dir->OpenChild(name);
      changed = !child.ok() || AnyChangedBelow(*child, 0, &budget);
    }
    if (changed) {
      Add(absl::StrCat(Show(crel), S_ISDIR(st.st_mode) ? ", a directory" : ", a file",
                       " that editors, shells or git act on by themselves, was created or "
                       "changed in this session"));
    }
  }
}

PlantedReport Checker::Run(const std::string& cwd_rel, const std::vector<std::string>& argv,
                           bool is_git) {
  std::set<std::string> named = {cwd_rel};
  for (size_t i = 1; i < argv.size(); ++i) CandidatesOf(cwd_rel, argv[i], &named);
  // Each directory and every one above it, up to the workspace root.
  std::set<std::string> dirs;
  for (const std::string& d : named) {
    std::string rel = d;
    while (dirs.insert(rel).second && !rel.empty()) {
      rel = rel.find('/') == std::string::npos ? "" : vocab::Dirname(rel);
    }
  }
  size_t checked = 0;
  for (const std::string& rel : dirs) {
    if (++checked > kMaxCheckedDirectories) {
      Add(absl::StrCat("the command names more than ", kMaxCheckedDirectories,
                       " directories; the rest could not be checked for planted code"));
      break;
    }
    CheckDirectory(rel);
  }
  PlantedReport report;
  report.findings = std::move(findings_);
  if (is_git && report.findings.empty() && !nested_git_ && !names_outside_) {
    // Every directory git could start from reaches the workspace's own
    // repository (the Git Shadow keeps its config and hooks out of the
    // sandbox's reach). Pinned, git does no discovery at run time.
    struct stat st {};
    bool pin = fstatat(root_.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    for (size_t i = 1; i < argv.size() && pin; ++i) {
      const std::string& w = argv[i];
      // Options that pick another repository or make one, and the commands
      // that create one: run as asked, unpinned.
      if (absl::StartsWith(w, "--git-dir") || absl::StartsWith(w, "--work-tree") ||
          absl::StartsWith(w, "--bare") || w == "init" || w == "clone") {
        pin = false;
      }
    }
    if (pin) {
      report.git_pin_env = {absl::StrCat("GIT_DIR=", scope_.host_workspace, "/.git"),
                            absl::StrCat("GIT_WORK_TREE=", scope_.host_workspace)};
    }
  }
  return report;
}

}  // namespace

PlantedReport CheckPlantedArgv(const PlantedScope& scope, absl::string_view host_cwd,
                               const std::vector<std::string>& argv, bool is_git) {
  PlantedReport report;
  absl::StatusOr<DirFd> root = DirFd::OpenTrusted(scope.host_workspace);
  if (!root.ok() || !vocab::IsAtOrUnder(host_cwd, scope.host_workspace)) {
    report.findings.push_back(absl::StrCat(
        "the workspace could not be checked for planted code (",
        root.ok() ? "the working directory is outside it" : root.status().message(), ")"));
    return report;
  }
  const std::string cwd_rel = host_cwd.size() == scope.host_workspace.size()
                                  ? std::string()
                                  : std::string(host_cwd.substr(scope.host_workspace.size() + 1));
  return Checker(scope, *std::move(root)).Run(cwd_rel, argv, is_git);
}

PlantedReport CheckPlanted(const PlantedScope& scope, const command::CheckedCommand& command) {
  return CheckPlantedArgv(scope, command.host_cwd(), command.argv(),
                          IsGitCommand(command.binary(), command.argv()));
}

namespace {
bool NamesGit(absl::string_view path) {
  const size_t slash = path.rfind('/');
  const absl::string_view base = slash == absl::string_view::npos ? path : path.substr(slash + 1);
  return base == "git" || absl::StartsWith(base, "git-");
}
}  // namespace

bool IsGitBinary(const command::ResolvedBinary& binary) { return NamesGit(binary.path); }

bool IsGitCommand(const command::ResolvedBinary& binary, const std::vector<std::string>& argv) {
  if (IsGitBinary(binary)) return true;
  for (size_t i = 1; i < argv.size(); ++i) {
    if (NamesGit(argv[i])) return true;
  }
  return false;
}

std::vector<std::string> GitProtectionEnvironment() {
  static const std::pair<const char*, const char*> kConfig[] = {
      {"core.fsmonitor", "false"},
      {"core.hooksPath", "/dev/null"},
      {"core.pager", "cat"},
      {"core.editor", "false"},
      {"sequence.editor", "false"},
      {"protocol.ext.allow", "never"},
      {"core.untrackedCache", "false"},
  };
  std::vector<std::string> env;
  size_t i = 0;
  for (const auto& [key, value] : kConfig) {
    env.push_back(absl::StrCat("GIT_CONFIG_KEY_", i, "=", key));
    env.push_back(absl::StrCat("GIT_CONFIG_VALUE_", i, "=", value));
    ++i;
  }
  env.push_back(absl::StrCat("GIT_CONFIG_COUNT=", i));
  env.push_back("GIT_PAGER=cat");
  env.push_back("GIT_EDITOR=false");
  env.push_back("GIT_TERMINAL_PROMPT=0");
  return env;
}

std::vector<std::string> NewFindings(const std::vector<std::string>& before,
                                     const std::vector<std::string>& after) {
  const std::set<std::string> old(before.begin(), before.end());
  std::vector<std::string> out;
  for (const std::string& f : after) {
    if (old.count(f) == 0) out.push_back(f);
  }
  return out;
}

}  // namespace lazaret::brokerd
