#include "services/sessiond/gitshadow/sync.h"

#include <optional>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "services/sessiond/gitshadow/inspect.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/status_util.h"

namespace lazaret::cli::gitshadow {

using fs::DirFd;

namespace {

// Other refs below refs/heads/lazaret/ bound read-only into one sandbox.
constexpr size_t kMaxProtectedEntries = 256;

}  // namespace

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
    LAZ_RETURN_IF_ERROR(fs::RemoveContents(refs));
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
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> names, fs::ListNames(*dir));
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
