#include "services/sessiond/gitshadow/inspect.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/sessiond/gitshadow/git.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"

namespace lazaret::cli::gitshadow {

using fs::DirFd;

namespace {

constexpr size_t kMaxSubmodules = 1000;
constexpr int kMaxSubmoduleDepth = 8;

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

}  // namespace

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
    LAZ_ASSIGN_OR_RETURN(std::string contents, fs::ReadRegularFileAt(parent, ".git", 4096));
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

}  // namespace lazaret::cli::gitshadow
