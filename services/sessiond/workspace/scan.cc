#include "services/sessiond/workspace/scan.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "services/sessiond/workspace/ownership.h"
#include "services/sessiond/workspace/walk.h"
#include "services/spawn/subprocess.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::workspace {
namespace {

using vocab::Basename;
using fs::DirFd;
using vocab::Dirname;

constexpr size_t kMaxEditorFilesShown = 50;
constexpr size_t kMaxSymlinksShown = 50;

// A name or target the agent chose, shown with every byte visible: no
// terminal control sequence reaches the developer's terminal.
std::string Shown(const std::string& s) { return absl::CHexEscape(s); }

}  // namespace

absl::StatusOr<ScanReport> ScanAtSessionEnd(const GitDirSnapshot& snap, const ScanLimits& limits) {
  ScanReport report;
  const int depth = AffordableDepth(limits.max_depth);
  const std::string suffix = QuarantineSuffix(snap.session_id);
  for (size_t i = 0; i < snap.roots.size(); ++i) {
    const ScanRoot& root = snap.roots[i];
    Walk w(Purpose::kEnd, root, snap.since, limits, depth, &report.stripped);
    if (absl::Status s = w.Run(); !s.ok()) {
      report.problems.push_back(
          absl::StrCat(root.path, " could not be checked at all: ", s.message()));
      continue;
    }
    if (w.handed_back() > 0) report.handed_back[OwnerName(root)] += w.handed_back();
    for (auto& p : w.problems()) report.problems.push_back(std::move(p));
    for (auto& e : w.acted_on_files()) report.acted_on_files.push_back(std::move(e));
    for (auto& l : w.outward_symlinks()) report.outward_symlinks.push_back(std::move(l));

    // Deepest first: a repository inside another's git directory is
    // neutralised before its container is renamed.
    std::vector<FoundGitDir>& found = w.git_dirs();
    std::stable_sort(found.begin(), found.end(), [](const FoundGitDir& a, const FoundGitDir& b) {
      return std::count(a.rel.begin(), a.rel.end(), '/') >
             std::count(b.rel.begin(), b.rel.end(), '/');
    });
    std::vector<PlantedRepository> planted;
    for (const FoundGitDir& f : found) {
      auto it = snap.prints.find({i, f.rel});
      if (it != snap.prints.end() && it->second == f.print) continue;  // untouched
      PlantedRepository p;
      p.path = Join(root.path, f.rel);
      p.kind = absl::StrCat(f.kind, it == snap.prints.end() ? ", created" : ", changed",
                            " in this session");
      if (snap.quarantine) {
        Neutralise(root, f, suffix, &p);
      } else {
        p.inspect = f.layout ? absl::StrCat("cat ", ShellQuote(p.path + "/config"))
                             : absl::StrCat("cat ", ShellQuote(p.path));
      }
      planted.push_back(std::move(p));
    }
    // Directories the walk could not look into: an agent-made one may hide
    // a repository, so it goes aside too (a pre-existing one is reported).
    for (const Unchecked& u : w.unchecked()) {
      const std::string path = Join(root.path, u.rel);
      if (!u.agent_made || !snap.quarantine) {
        report.problems.push_back(absl::StrCat(path,
                                               " was not checked for planted git repositories (",
                                               u.why, "). Do not run git below it before looking"));
        continue;
      }
      absl::StatusOr<DirFd> parent = OpenRel(root.path, Dirname(u.rel));
      absl::StatusOr<std::string> to =
          parent.ok() ? RenameAside(*parent, Basename(u.rel), suffix) : parent.status();
      if (!to.ok()) {
        report.problems.push_back(
            absl::StrCat(path, " was not checked (", u.why, ") and could not be moved aside: ",
                         to.status().message(), ". Do not run git below it before looking"));
        continue;
      }
      report.problems.push_back(
          absl::StrCat(path, " was not checked for planted git repositories (", u.why,
                       "), so it was moved aside to ", Join(root.path, Dirname(u.rel)), "/", *to,
                       ". Do not run git below it before looking; delete it, or move it back"));
    }
    std::reverse(planted.begin(), planted.end());  // outermost first
    for (auto& p : planted) report.repositories.push_back(std::move(p));
  }
  return report;
}

std::vector<std::string> ReportLines(const ScanReport& r) {
  std::vector<std::string> out;
  for (const PlantedRepository& p : r.repositories) {
    if (p.neutralised) {
      out.push_back(absl::StrCat("neutralised a git repository the session planted or changed (",
                                 p.kind, "): ", p.path,
                                 p.now_at != p.path ? absl::StrCat(" -> ", p.now_at) : "",
                                 ". Host git no longer finds it there. Inspect: ", p.inspect,
                                 "  Restore (after inspecting its config and hooks): ", p.restore));
      if (!p.error.empty()) out.push_back(absl::StrCat("  (partly: ", p.error, ")"));
    } else if (!p.error.empty()) {
      out.push_back(absl::StrCat("WARNING: could not neutralise the git repository ", p.path, " (",
                                 p.kind, "): ", p.error,
                                 ". Its config can run commands when you use git there; "
                                 "inspect it before running git there: ",
                                 p.inspect));
    } else {
      out.push_back(
          absl::StrCat("warning: the profile keeps planted repositories "
                       "(keep_planted_repositories = true): ",
                       p.path, " (", p.kind,
                       ") is left as it is. Its config can run commands when you use "
                       "git there; inspect it first: ",
                       p.inspect));
    }
  }
  for (const auto& [owner, n] : r.handed_back) {
    out.push_back(absl::StrCat("gave ", n, n == 1 ? " file" : " files",
                               " the session created or changed (owned by host root or another "
                               "user) back to ",
                               owner, ", the owner of the workspace or volume"));
  }
  if (!r.stripped.empty()) {
    out.push_back(absl::StrCat("removed privilege bits the session set on ", r.stripped.size(),
                               " file", r.stripped.size() == 1 ? "" : "s", ":"));
    for (const auto& s : r.stripped) out.push_back(absl::StrCat("  ", s));
  }
  if (!r.acted_on_files.empty()) {
    out.push_back(absl::StrCat(
        "the session created or changed ", r.acted_on_files.size(),
        " file(s) that editors, shells, build tools or coding agents act on by themselves; look "
        "at them before opening the folder in an editor or agent, cd-ing there with "
        "direnv/mise/nvm, or building there:"));
    for (size_t i = 0; i < r.acted_on_files.size() && i < kMaxEditorFilesShown; ++i) {
      out.push_back(
          absl::StrCat("  ", r.acted_on_files[i].tools, ": ", Shown(r.acted_on_files[i].path)));
    }
    if (r.acted_on_files.size() > kMaxEditorFilesShown) {
      out.push_back(
          absl::StrCat("  ... and ", r.acted_on_files.size() - kMaxEditorFilesShown, " more"));
    }
  }
  if (!r.outward_symlinks.empty()) {
    out.push_back(absl::StrCat(
        "the session left ", r.outward_symlinks.size(), " symlink",
        r.outward_symlinks.size() == 1 ? "" : "s",
        " that point outside the folder (Lazaret followed none; a host program that opens one "
        "reads or writes outside the folder):"));
    for (size_t i = 0; i < r.outward_symlinks.size() && i < kMaxSymlinksShown; ++i) {
      out.push_back(absl::StrCat("  ", Shown(r.outward_symlinks[i].path), " -> ",
                                 Shown(r.outward_symlinks[i].target)));
    }
    if (r.outward_symlinks.size() > kMaxSymlinksShown) {
      out.push_back(
          absl::StrCat("  ... and ", r.outward_symlinks.size() - kMaxSymlinksShown, " more"));
    }
  }
  for (const auto& p : r.problems) out.push_back(absl::StrCat("WARNING: ", p));
  return out;
}

}  // namespace lazaret::cli::workspace
