#include "services/sessiond/session/reap.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/escalation/broker_client.h"
#include "services/sessiond/gitshadow/state.h"
#include "services/sessiond/gitshadow/sync.h"
#include "services/sessiond/held/view.h"
#include "clients/lazaret/net/egress_client.h"
#include "clients/lazaret/net/netpolicy_client.h"
#include "clients/lazaret/persist/mount_client.h"
#include "services/podman/host.h"
#include "services/sessiond/session/names.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/workspace/scan.h"
#include "services/sessiond/workspace/snapshot.h"
#include "services/common/fs/dir.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"

namespace lazaret::cli::session {
namespace {

void ReportWriteBacks(
    const absl::StatusOr<
        std::vector<std::pair<gitshadow::WriteBackTarget, gitshadow::WriteBackReport>>>& all,
    const LineSink& out) {
  if (!all.ok()) {
    out(absl::StrCat("  git write-back failed: ", all.status().message()));
    return;
  }
  for (const auto& [target, report] : *all) {
    for (const auto& s : report.imported) {
      out(absl::StrCat("  git: imported ", s, " into ", target.host_common_dir));
    }
    for (const auto& s : report.conflicts) out(absl::StrCat("  git: conflict: ", s));
    for (const auto& s : report.rejected) out(absl::StrCat("  git: not imported: ", s));
    for (const auto& s : report.removed) out(absl::StrCat("  git: removed: ", s));
    if (!report.import_status.ok()) {
      out(absl::StrCat("  git: import failed: ", report.import_status.message()));
    }
  }
}

// The workspace scan snapshot a session recorded before its sandbox
// started (workspace/snapshot.h), if any.
std::optional<workspace::GitDirSnapshot> ReadSnapshot(const std::string& session_path,
                                                      const LineSink& out) {
  absl::StatusOr<fs::DirFd> dir = fs::DirFd::Open(session_path);
  if (!dir.ok()) return std::nullopt;
  absl::StatusOr<std::string> text =
      fs::ReadRegularFileAt(*dir, workspace::kSnapshotFileName, 256ull << 20);
  if (!text.ok()) return std::nullopt;
  absl::StatusOr<workspace::GitDirSnapshot> snap = workspace::ParseSnapshot(*text);
  if (!snap.ok()) {
    out(absl::StrCat("  WARNING: the session's workspace snapshot is unreadable (",
                     snap.status().message(), ")"));
    return std::nullopt;
  }
  return *std::move(snap);
}

// The end-of-session workspace scan the dead session never ran: privilege
// bits stripped, planted repositories neutralised, editor files listed.
void ScanWorkspace(const SessionView& v, const std::optional<workspace::GitDirSnapshot>& snap,
                   const LineSink& out) {
  if (!snap.has_value()) {
    if (v.dir.has_value() && v.dir->has_record) {
      out(absl::StrCat(
          "  WARNING: no workspace snapshot for this session: ", v.dir->record.workspace,
          " was not checked for planted git repositories or setuid files; do not "
          "run git there before looking"));
    }
    return;
  }
  absl::StatusOr<workspace::ScanReport> report = workspace::ScanAtSessionEnd(*snap);
  if (!report.ok()) {
    out(absl::StrCat("  WARNING: the workspace scan failed: ", report.status().message()));
    return;
  }
  for (const std::string& line : workspace::ReportLines(*report))
    out(absl::StrCat("  workspace: ", line));
}

// The held views the dead session never captured (held/view.h): the
// agent's changes to the paths host programs act on go to the profile's
// held store, its new catalogue entries are held and removed from the
// folder, and its placeholders go.
void HoldViews(const std::string& session_path, const LineSink& out) {
  absl::StatusOr<held::SessionViews> views = held::SessionViews::Load(session_path, Rootless());
  if (absl::IsNotFound(views.status())) return;
  if (!views.ok()) {
    out(absl::StrCat("  WARNING: the session's held views could not be read (",
                     views.status().message(),
                     "); what it wrote to editor, shell and agent settings was not held"));
    return;
  }
  for (const std::string& line : held::HeldReportLines(views->End())) out(absl::StrCat("  ", line));
}

}  // namespace

// Its containers (by name, so a reap needs no listing: the sidecar with
// everything in its network namespace, then any other container of the
// session), then the Git Shadow write-back and the end-of-session
// workspace scan it never did, and its directory last.
bool ReapSession(const SessionView& v, const LineSink& out) {
  bool ok = true;
  out(absl::StrCat("session ", v.id, " (profile ", v.profile(), "):"));
  std::vector<absl::Status> results;
  results.push_back(RemoveWithDependents(SidecarName(v.id), 0));
  results.push_back(RemoveContainer(SandboxName(v.id), 0));
  for (const auto& c : v.containers) {
    if (c.name != SidecarName(v.id) && c.name != SandboxName(v.id)) {
      results.push_back(RemoveContainer(c.name, 0));
    }
  }
  for (const auto& s : results) {
    if (!s.ok()) {
      out(absl::StrCat("  ", s.message()));
      ok = false;
    }
  }
  for (const auto& c : v.containers) {
    out(absl::StrCat("  removed container ", c.name, " (", c.state, ")"));
  }
  // egressd ends the session's proxy, netpolicyd forgets the session's
  // policy once its containers are gone,
  // brokerd ends its escalation endpoint and the mount helper lets go of
  // its overlays (each also does on the registry's ENDED event).
  if (ok && !v.runtime_dir.empty()) {
    if (absl::Status s = net::DetachEgressBestEffort(v.runtime_dir, v.id); !s.ok()) {
      out(absl::StrCat("  ", s.message()));
    }
    if (absl::Status s = net::DetachSessionBestEffort(v.runtime_dir, v.id); !s.ok()) {
      out(absl::StrCat("  ", s.message()));
    }
    if (absl::Status s = escalation::DetachSessionBestEffort(v.runtime_dir, v.id); !s.ok()) {
      out(absl::StrCat("  ", s.message()));
    }
    if (absl::Status s = persist::DetachSessionBestEffort(v.runtime_dir, v.id); !s.ok()) {
      out(absl::StrCat("  ", s.message()));
    }
  }
  if (!v.dir.has_value()) return ok;
  if (v.dir->has_record && !v.dir->record.git_state_dir.empty()) {
    ReportWriteBacks(gitshadow::WriteBackAll(v.dir->record.git_state_dir), out);
  }
  if (ok) {
    HoldViews(v.dir->path, out);
    ScanWorkspace(v, ReadSnapshot(v.dir->path, out), out);
  } else {
    out("  workspace scan not run while the session's containers may remain; run lazaret "
        "clean again");
  }
  if (!ok) return false;
  if (absl::Status s = fs::RemoveTree(v.dir->path); !s.ok()) {
    out(absl::StrCat("  ", s.message()));
    return false;
  }
  out(absl::StrCat("  removed ", v.dir->path));
  return true;
}

absl::StatusOr<CleanOutcome> CleanDeadSession(const std::string& runtime_dir, const std::string& id,
                                              const LineSink& out) {
  absl::StatusOr<std::vector<FoundSession>> dirs = FindSessionDirs(runtime_dir);
  if (!dirs.ok()) return dirs.status();
  std::optional<FoundSession> dir;
  for (FoundSession& d : *dirs) {
    if (d.id == id) dir = std::move(d);
  }
  if (!dir.has_value()) {
    // No directory: only containers carrying this instance's labels.
    absl::StatusOr<std::map<std::string, SessionView>> all = CollectSessions(runtime_dir);
    if (!all.ok()) return all.status();
    auto it = all->find(id);
    if (it == all->end()) return CleanOutcome::kNothingLeft;
    return ReapSession(it->second, out) ? CleanOutcome::kReaped : CleanOutcome::kReapFailed;
  }
  if (dir->owner_alive) return CleanOutcome::kOwnerAlive;
  SessionView view;
  view.id = id;
  view.runtime_dir = runtime_dir;
  view.dir = *std::move(dir);
  return ReapSession(view, out) ? CleanOutcome::kReaped : CleanOutcome::kReapFailed;
}

absl::StatusOr<CleanSummary> CleanDeadSessions(const std::string& runtime_dir,
                                               const LineSink& out) {
  absl::StatusOr<std::map<std::string, SessionView>> all = CollectSessions(runtime_dir);
  if (!all.ok()) return all.status();
  CleanSummary summary;
  for (const auto& [id, v] : *all) {
    if (v.owner_alive()) {
      ++summary.live;
      continue;
    }
    summary.ok = ReapSession(v, out) && summary.ok;
    ++summary.reaped;
  }
  return summary;
}

}  // namespace lazaret::cli::session
