#include "services/sessiond/workspace/acted_on.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/sessiond/workspace/git_config.h"
#include "services/sessiond/workspace/walk.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/workspace/catalogue.h"
#include "services/common/workspace/named_paths.h"

namespace lazaret::cli::workspace {
namespace {

using fs::DirFd;
using lazaret::workspace::MatchCatalogue;

constexpr uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
// Files read below one catalogue directory (their text may name scripts):
// a .claude/ or .vscode/ holds a handful; a bigger tree is read in part and
// reported.
constexpr size_t kMaxFilesReadPerDirectory = 256;
constexpr int kMaxReadDepth = 16;

PathType TypeOf(mode_t mode) {
  if (S_ISREG(mode)) return PathType::kFile;
  if (S_ISDIR(mode)) return PathType::kDirectory;
  if (S_ISLNK(mode)) return PathType::kSymlink;
  return PathType::kOther;
}

// The text of the regular file `rel` below `root`, at most
// kMaxActedOnTextBytes: opened beneath the root with no symlink anywhere,
// O_NONBLOCK so a FIFO put in its place never blocks, and read only when
// its own fstat says it is a regular file. nullopt for anything else.
std::optional<std::string> ReadText(const DirFd& root, const std::string& rel) {
  fs::OpenedBeneath o =
      fs::OpenBeneath(root.get(), rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, kBeneath);
  if (!o.fd.valid()) return std::nullopt;
  struct stat st {};
  if (fstat(o.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::string text;
  text.resize(kMaxActedOnTextBytes);
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(o.fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

// Whether `rel` below `root` is a regular file, looked up with no symlink
// anywhere on the way.
bool IsRegularFileBeneath(const DirFd& root, const std::string& rel) {
  fs::OpenedBeneath o = fs::OpenBeneath(root.get(), rel, O_PATH | O_NOFOLLOW, kBeneath);
  if (!o.fd.valid()) return false;
  struct stat st {};
  return fstat(o.fd.get(), &st) == 0 && S_ISREG(st.st_mode);
}

class Finder {
 public:
  Finder(const std::string& workspace, const DirFd& root, const ScanLimits& limits)
      : workspace_(workspace),
        root_(root),
        limits_(limits),
        max_depth_(AffordableDepth(limits.max_depth)) {}

  // The catalogue instances below `dir`: each entry is matched on its path
  // from the root; a match is recorded and not entered, anything else that
  // is a directory is entered.
  void Walk(const DirFd& dir, const std::string& rel, int depth) {
    absl::StatusOr<std::vector<std::string>> names = fs::ListNames(dir);
    if (!names.ok()) {
      out_.problems.push_back(absl::StrCat(Join(workspace_, rel), ": could not be listed (",
                                           names.status().message(),
                                           "); files host programs act on below it are not held"));
      return;
    }
    std::sort(names->begin(), names->end());
    for (const std::string& name : *names) {
      if (++entries_ > limits_.max_entries) {
        if (!entries_reported_) {
          out_.problems.push_back(absl::StrCat("more than ", limits_.max_entries, " entries below ",
                                               workspace_,
                                               "; files host programs act on past them are "
                                               "not held"));
          entries_reported_ = true;
        }
        return;
      }
      // Git's own directory is the Git Shadow's (docs/git-shadow.md).
      if (name == ".git") continue;
      struct stat st {};
      if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      const std::string crel = rel.empty() ? name : absl::StrCat(rel, "/", name);
      std::optional<lazaret::workspace::CatalogueMatch> m = MatchCatalogue(crel);
      // A file entry's name on a directory (a virtualenv called ".env") is
      // not that file; its contents are walked like any directory.
      if (m.has_value() && m->rel == crel && (m->entry->directory || !S_ISDIR(st.st_mode))) {
        Add(crel, std::string(m->entry->tools), TypeOf(st.st_mode));
        continue;
      }
      if (!S_ISDIR(st.st_mode)) continue;
      if (depth + 1 >= max_depth_) {
        out_.problems.push_back(absl::StrCat(Join(workspace_, crel), ": deeper than ", max_depth_,
                                             " levels; not checked"));
        continue;
      }
      absl::StatusOr<DirFd> child = dir.OpenChild(name);
      if (!child.ok()) {
        out_.problems.push_back(absl::StrCat(Join(workspace_, crel), ": could not be opened (",
                                             child.status().message(),
                                             "); files host programs act on below it are not "
                                             "held"));
        continue;
      }
      Walk(*child, crel, depth + 1);
    }
  }

  // The paths the host's git config names inside the workspace.
  void GitNamed(const std::string& home) {
    absl::StatusOr<HostGitConfig> config = ReadHostGitConfig(workspace_);
    if (!config.ok()) {
      out_.problems.push_back(
          absl::StrCat("the paths the host's git config names could not be "
                       "found: ",
                       config.status().message()));
      return;
    }
    const absl::StatusOr<std::string>& top = config->top;
    if (!top.ok()) {
      out_.problems.push_back(
          absl::StrCat("the top of the host's working tree could not be "
                       "found: ",
                       top.status().message()));
      return;
    }
    std::map<std::string, std::string> origins;  // the last one wins, as in git
    for (const auto& e : config->entries) origins[e.key] = e.origin;
    for (const lazaret::workspace::NamedPath& n :
         lazaret::workspace::PathsNamedByGitConfig(config->entries, *top, workspace_, home)) {
      const std::string why = absl::StrCat(n.key, " (", origins[n.key], ")");
      // Walk the components without following any: the first one that is
      // not a directory (a symlink, a file, missing) is what is there.
      std::vector<std::string> parts = absl::StrSplit(n.rel, '/');
      std::string rel;
      std::optional<DirFd> dir;
      bool done = false;
      for (size_t i = 0; i < parts.size() && !done; ++i) {
        rel = rel.empty() ? parts[i] : absl::StrCat(rel, "/", parts[i]);
        const DirFd& at = dir.has_value() ? *dir : root_;
        struct stat st {};
        if (fstatat(at.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
          Add(n.rel, why, PathType::kAbsent);
          done = true;
        } else if (i + 1 == parts.size() || !S_ISDIR(st.st_mode)) {
          Add(rel, why, TypeOf(st.st_mode));
          done = true;
        } else {
          absl::StatusOr<DirFd> child = at.OpenChild(parts[i]);
          if (!child.ok()) {
            out_.problems.push_back(
                absl::StrCat(Join(workspace_, rel), " (on the way to ", n.rel, ", named by ", why,
                             ") could not be opened: ", child.status().message()));
            done = true;
          } else {
            dir = std::move(*child);
          }
        }
      }
    }
  }

  // Regular files the text of the acted-on files names, and the files
  // those name in turn, up to kMaxTextNamedFiles.
  void TextNamed() {
    std::deque<std::string> to_read;
    for (const ActedOnPath& p : found_) {
      if (p.type == PathType::kFile) {
        to_read.push_back(p.rel);
      } else if (p.type == PathType::kDirectory) {
        size_t budget = kMaxFilesReadPerDirectory;
        FilesBelow(p.rel, 0, &budget, &to_read);
      }
    }
    std::set<std::string> read;
    size_t named = 0;
    while (!to_read.empty()) {
      const std::string rel = to_read.front();
      to_read.pop_front();
      if (!read.insert(rel).second) continue;
      std::optional<std::string> text = ReadText(root_, rel);
      if (!text.has_value()) continue;
      const size_t slash = rel.rfind('/');
      const std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash);
      for (const std::string& token : lazaret::workspace::PathsNamedInText(*text)) {
        // Relative to the workspace root (where hooks, tasks and MCP
        // servers run) and to the file's own directory (a nested .envrc).
        for (const std::string& candidate :
             {token, dir.empty() ? std::string() : absl::StrCat(dir, "/", token)}) {
          if (candidate.empty() || known_.count(candidate) > 0) continue;
          if (!IsRegularFileBeneath(root_, candidate)) continue;
          if (named >= kMaxTextNamedFiles) {
            out_.problems.push_back(absl::StrCat("the acted-on files name more than ",
                                                 kMaxTextNamedFiles, " files; ", candidate,
                                                 " and any after it are not held"));
            return;
          }
          ++named;
          Add(candidate, absl::StrCat("named by ", rel), PathType::kFile);
          to_read.push_back(candidate);
        }
      }
    }
  }

  ActedOnPaths Take() {
    std::sort(found_.begin(), found_.end(),
              [](const ActedOnPath& a, const ActedOnPath& b) { return a.rel < b.rel; });
    std::set<std::string> kept;
    for (ActedOnPath& p : found_) {
      bool inside = false;
      for (size_t slash = p.rel.find('/'); slash != std::string::npos && !inside;
           slash = p.rel.find('/', slash + 1)) {
        inside = kept.count(p.rel.substr(0, slash)) > 0;
      }
      if (inside || !kept.insert(p.rel).second) continue;
      out_.paths.push_back(std::move(p));
    }
    return std::move(out_);
  }

 private:
  void Add(const std::string& rel, std::string why, PathType type) {
    // The workspace's own .git is the Git Shadow's (docs/git-shadow.md); a
    // config that names a path in it (core.hooksPath = .git/hooks) is
    // covered there.
    if (rel == ".git" || rel.rfind(".git/", 0) == 0) return;
    if (!known_.insert(rel).second) return;
    found_.push_back({rel, std::move(why), type});
  }

  // The regular files below the directory `rel`, breadth of a small tree.
  void FilesBelow(const std::string& rel, int depth, size_t* budget,
                  std::deque<std::string>* files) {
    if (depth >= kMaxReadDepth) return;
    fs::OpenedBeneath o =
        fs::OpenBeneath(root_.get(), rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, kBeneath);
    if (!o.fd.valid()) return;
    const DirFd dir = DirFd::Adopt(o.fd.release());
    absl::StatusOr<std::vector<std::string>> names = fs::ListNames(dir);
    if (!names.ok()) return;
    std::sort(names->begin(), names->end());
    for (const std::string& name : *names) {
      if (*budget == 0) return;
      struct stat st {};
      if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      const std::string crel = absl::StrCat(rel, "/", name);
      if (S_ISREG(st.st_mode)) {
        --*budget;
        files->push_back(crel);
      } else if (S_ISDIR(st.st_mode)) {
        FilesBelow(crel, depth + 1, budget, files);
      }
    }
  }

  const std::string workspace_;
  const DirFd& root_;
  const ScanLimits& limits_;
  const int max_depth_;
  uint64_t entries_ = 0;
  bool entries_reported_ = false;
  std::vector<ActedOnPath> found_;
  std::set<std::string> known_;
  ActedOnPaths out_;
};

}  // namespace

const char* PathTypeName(PathType type) {
  switch (type) {
    case PathType::kFile:
      return "file";
    case PathType::kDirectory:
      return "directory";
    case PathType::kSymlink:
      return "symlink";
    case PathType::kOther:
      return "other";
    case PathType::kAbsent:
      return "absent";
  }
  return "unknown";
}

absl::StatusOr<ActedOnPaths> FindActedOnPaths(const std::string& workspace, const std::string& home,
                                              const ScanLimits& limits) {
  absl::StatusOr<DirFd> root = DirFd::Open(workspace);
  if (!root.ok()) {
    return absl::Status(
        root.status().code(),
        absl::StrCat("opening the workspace ", workspace,
                     " to find the files host programs act on: ", root.status().message()));
  }
  Finder finder(workspace, *root, limits);
  finder.Walk(*root, "", 0);
  finder.GitNamed(home);
  finder.TextNamed();
  return finder.Take();
}

}  // namespace lazaret::cli::workspace
