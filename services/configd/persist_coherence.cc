#include "services/configd/persist_coherence.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "services/vocab/host_path.h"

namespace lazaret::config {
namespace {

// Directories of one side of a rule: every path at or under a root, except
// what lies at or under an exclusion.
struct PathSet {
  std::vector<absl::string_view> roots;
  std::vector<absl::string_view> except;
};

// One package manager: `files` is what it installs, `record` what it keeps
// about that (a database, or links to the installed packages); the two
// must persist together. `alongside` should persist with both. Each text
// completes a sentence of the warning.
struct CoherenceRule {
  absl::string_view manager;
  PathSet files;
  absl::string_view files_text;
  absl::string_view record;  // one directory, persisted whole
  absl::string_view record_text;
  // What goes wrong with files but no record, and with a record but no files.
  absl::string_view without_record;
  absl::string_view without_files;
  absl::string_view fix_without_record;
  absl::string_view fix_without_files;
  std::vector<absl::string_view> alongside;
  absl::string_view without_alongside;
};

// dpkg lists the files of every package in /var/lib/dpkg; apt keeps its
// package lists and which packages were installed only as dependencies in
// /var/lib/apt. Debian installs into /usr (not /usr/local), /etc, /opt and
// the root directories that merged-/usr images make symlinks into /usr.
// `npm install -g` puts a package in /usr/local/lib/node_modules and links
// its commands into /usr/local/bin; persisting /usr/local keeps both.
const std::vector<CoherenceRule>& CoherenceRules() {
  static const std::vector<CoherenceRule>* const kRules = new std::vector<CoherenceRule>{
      {"dpkg/apt",
       {{"/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"},
        {"/usr/local"}},
       "the files dpkg and apt install",
       "/var/lib/dpkg",
       "dpkg's database of installed packages",
       "packages installed with apt-get or dpkg keep their files, but the next sandbox's dpkg no "
       "longer knows them: it cannot upgrade or remove them, and apt installs them again over "
       "the kept files",
       "the next sandbox's dpkg believes packages are installed whose files are gone with the "
       "sandbox, so apt-get neither reinstalls nor repairs them",
       "add \"/var/lib/dpkg\" and \"/var/lib/apt\" to persistent_dirs: [\"/usr\", "
       "\"/var/lib/dpkg\", \"/var/lib/apt\"] keeps apt coherent (add \"/etc\" to keep the "
       "packages' configuration too), or stop persisting the package files",
       "add \"/usr\" to persistent_dirs (and \"/etc\" to keep the packages' configuration), or "
       "stop persisting \"/var/lib/dpkg\"",
       {"/var/lib/apt"},
       "apt's package lists and its record of which packages were installed only as dependencies "
       "are lost with each new sandbox (apt-get install needs apt-get update first, and "
       "apt-get autoremove no longer finds what it may remove)"},
      {"npm",
       {{"/usr/local/lib/node_modules"}, {}},
       "the packages `npm install -g` installs",
       "/usr/local/bin",
       "the commands npm links to them",
       "the packages survive, but the links to their commands in /usr/local/bin do not, so the "
       "next sandbox does not find the commands",
       "the links npm writes to /usr/local/bin survive, but the packages they point into "
       "(/usr/local/lib/node_modules) do not, so the next sandbox has broken commands",
       "persist \"/usr/local\" instead: it holds both",
       "persist \"/usr/local\" instead: it holds both",
       {},
       ""},
  };
  return *kRules;
}

// A persisted directory equals or contains `path`.
bool Covered(const std::vector<std::string>& dirs, absl::string_view path) {
  return std::any_of(dirs.begin(), dirs.end(),
                     [&](const std::string& d) { return vocab::IsAtOrUnder(path, d); });
}

// The persisted directories that hold part of `set`: inside a root (and not
// inside an exclusion), or containing a root.
std::vector<std::string> Touching(const std::vector<std::string>& dirs, const PathSet& set) {
  std::vector<std::string> out;
  for (const std::string& d : dirs) {
    bool hit = false;
    for (absl::string_view root : set.roots) {
      if (vocab::IsAtOrUnder(root, d)) hit = true;
      if (vocab::IsAtOrUnder(d, root) &&
          std::none_of(set.except.begin(), set.except.end(),
                       [&](absl::string_view e) { return vocab::IsAtOrUnder(d, e); })) {
        hit = true;
      }
    }
    if (hit) out.push_back(d);
  }
  return out;
}

std::string Quoted(const std::vector<std::string>& dirs) {
  return absl::StrJoin(dirs, ", ", [](std::string* out, const std::string& d) {
    absl::StrAppend(out, "\"", d, "\"");
  });
}

}  // namespace

std::vector<CoherenceWarning> CheckPersistCoherence(const std::vector<std::string>& dirs) {
  std::vector<CoherenceWarning> out;
  for (const CoherenceRule& r : CoherenceRules()) {
    const std::vector<std::string> files = Touching(dirs, r.files);
    const std::vector<std::string> record = Touching(dirs, PathSet{{r.record}, {}});
    const bool record_whole = Covered(dirs, r.record);
    if (!files.empty() && !record_whole) {
      out.push_back(
          {absl::StrCat("persists ", r.files_text, " (", Quoted(files), ") without ",
                        record.empty() ? "" : "all of ", r.record_text, " \"", r.record, "\"",
                        record.empty() ? "" : absl::StrCat(" (only ", Quoted(record), ")"), ": ",
                        r.without_record),
           std::string(r.fix_without_record)});
    } else if (files.empty() && !record.empty()) {
      out.push_back({absl::StrCat("persists ", r.record_text, " (", Quoted(record), ") without ",
                                  r.files_text, ": ", r.without_files),
                     std::string(r.fix_without_files)});
    }
    if (files.empty() || !record_whole) continue;
    std::vector<std::string> missing;
    for (absl::string_view a : r.alongside) {
      if (!Covered(dirs, a)) missing.push_back(std::string(a));
    }
    if (!missing.empty()) {
      out.push_back({absl::StrCat("persists ", r.manager, "'s files and \"", r.record,
                                  "\" but not ", Quoted(missing), ": ", r.without_alongside),
                     absl::StrCat("add ", Quoted(missing), " to persistent_dirs")});
    }
  }
  return out;
}

}  // namespace lazaret::config
