#include "services/sessiond/gitshadow/import.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <ctime>
#include <optional>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"
#include "services/sessiond/gitshadow/classify.h"
#include "services/sessiond/gitshadow/git.h"
#include "services/sessiond/gitshadow/inspect.h"
#include "services/sessiond/gitshadow/tree.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::gitshadow {

using fs::DirFd;

namespace {

// Files in the session's ref directory looked at per write-back: its own
// branch is read by path; the rest is only reported (never imported).
constexpr size_t kMaxRefFilesConsidered = 1000;
// Lines about refs the session may not move, per write-back.
constexpr size_t kMaxStrayLines = 20;
// Refused packs remembered per repository state.
constexpr size_t kMaxRejectedPacks = 1000;

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
    return fs::RemoveTreeAt(dir, "import-failure");
  }
  return WriteStateLines(
      state, "import-failure",
      {f.key, absl::StrCat(f.count), absl::StrCat(f.retry_after), absl::CEscape(f.message)});
}

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

// 1. Sweeps everything the sandbox can write, reporting each removal.
absl::Status SweepSandboxWrites(const RepoState& state, size_t hex_length,
                                WriteBackReport* report) {
  const WalkLimits walk;
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
  return absl::OkStatus();
}

// 2. The session's own branch - the only ref it may move - holding exactly
// one object id. Read by its path, so no number of other files can hide it.
// Every other ref made or moved inside goes to report->rejected.
absl::StatusOr<RefMap> ReadSessionBranch(const RepoState& state, size_t hex_length,
                                         WriteBackReport* report) {
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
    auto packed = fs::ReadRegularFileAt(session, "packed-refs", kMaxPackedRefsBytes);
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
  return agent;
}

}  // namespace

int64_t ImportBackoffSeconds(int64_t failures) {
  if (failures <= 0) return 0;
  int64_t s = kFirstBackoffSeconds;
  for (int64_t i = 1; i < failures && s < kMaxBackoffSeconds; ++i) s *= 2;
  return std::min(s, kMaxBackoffSeconds);
}

absl::StatusOr<ImportOutcome> ImportLocked(const WriteBackTarget& target, const RepoState& state,
                                           const WriteBackOptions& options,
                                           WriteBackReport* report) {
  const size_t hex_length = *ObjectIdLength(target.object_format);
  ImportOutcome outcome;
  LAZ_RETURN_IF_ERROR(SweepSandboxWrites(state, hex_length, report));
  LAZ_ASSIGN_OR_RETURN(const RefMap agent, ReadSessionBranch(state, hex_length, report));

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
        src.ok() ? fs::RegularFileFingerprint(*src, vocab::Basename(pack)) : std::nullopt;
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
    LAZ_RETURN_IF_ERROR(fs::RemoveTreeAt(heads, "lazaret"));
    LAZ_RETURN_IF_ERROR(fs::MakeOwnDirsAt(heads, "lazaret", 0755).status());
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

}  // namespace lazaret::cli::gitshadow
