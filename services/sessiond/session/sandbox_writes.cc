#include "services/sessiond/session/sandbox_writes.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/sessiond/session/console.h"
#include "services/sessiond/session/mounts.h"
#include "services/sessiond/workspace/privileges.h"
#include "services/sessiond/workspace/roots.h"
#include "services/sessiond/workspace/scan.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"

namespace lazaret::cli::session {
namespace {

using Clock = std::chrono::steady_clock;

// A sweep never takes more than 1/kSweepDuty of the time: a tree that takes
// 1 s to walk is swept every 20 s (the supervision loop offers one every
// few ticks; supervise.cc).
constexpr int kSweepDuty = 20;

}  // namespace

void WriteBackLog::Add(const absl::StatusOr<gitshadow::WriteBackReport>& r) {
  if (!r.ok()) {
    Line(absl::StrCat("git write-back failed: ", r.status().message()));
    return;
  }
  for (const auto& s : r->imported) Line(absl::StrCat("imported ", s));
  for (const auto& s : r->conflicts) Line(absl::StrCat("conflict: ", s));
  for (const auto& s : r->rejected) Line(absl::StrCat("not imported: ", s));
  for (const auto& s : r->removed) Line(absl::StrCat("removed from write-back: ", s));
  if (!r->import_status.ok()) {
    Line(absl::StrCat("git import failed: ", r->import_status.message()));
  }
}

std::vector<std::string> WriteBackLog::Lines() const {
  std::vector<std::string> out = lines_;
  if (dropped_ != 0) out.push_back(absl::StrCat(dropped_, " further distinct messages not shown"));
  return out;
}

void WriteBackLog::Print() const {
  for (const auto& l : Lines()) Say(absl::StrCat("git shadow: ", l));
}

void WriteBackLog::Line(std::string line) {
  if (seen_.count(line) != 0) return;
  if (lines_.size() >= kMaxLines) {
    ++dropped_;
    if (seen_.size() < 4 * kMaxLines) seen_.insert(std::move(line));
    return;
  }
  seen_.insert(line);
  lines_.push_back(std::move(line));
}

absl::Status SandboxWrites::Snapshot(const std::string& session_id, const std::string& workspace,
                                     bool rootless,
                                     const lazaret::config::v1::ResolvedProfile& profile,
                                     const std::string& session_dir) {
  // Rootful, the agent's files belong to host root (no uid mapping works
  // with podman 4.3's storage here; docs/operations.md): the sweeps give
  // them to the owner of the tree they are in. Rootless, podman's mapping
  // already made them the developer's.
  const bool hand_back = !rootless;
  std::vector<workspace::ScanRoot> roots;
  roots.push_back({workspace, git_.has_value() && git_->has_repo, hand_back});
  for (const BindMount& v : ProfileVolumes(profile)) {
    if (!v.read_only) roots.push_back({v.host, false, hand_back});
  }
  LAZ_ASSIGN_OR_RETURN(workspace::GitDirSnapshot snap,
                       workspace::TakeGitDirSnapshot(session_id, std::move(roots),
                                                     !profile.keep_planted_repositories()));
  if (!snap.complete) {
    Say("warning: the workspace could not be walked completely before the session (a limit was "
        "reached); every git directory found at the end that cannot be proven unchanged will be "
        "treated as planted");
  }
  LAZ_ASSIGN_OR_RETURN(fs::DirFd dir, fs::DirFd::Open(session_dir));
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomicAt(dir, workspace::kSnapshotFileName,
                                            workspace::SerializeSnapshot(snap), 0600));
  scan_snapshot_ = std::move(snap);
  return absl::OkStatus();
}

void SandboxWrites::WriteBackNow(bool final_attempt) {
  if (!git_.has_value() || !git_->has_repo) return;
  gitshadow::WriteBackOptions options;
  options.final_attempt = final_attempt;
  write_back_log_.Add(gitshadow::WriteBack(git_->write_back, options));
}

void SandboxWrites::ReleaseRepository() {
  if (git_.has_value()) git_->lease.reset();
}

void SandboxWrites::SweepPrivilegeBits() {
  if (!scan_snapshot_.has_value() || Clock::now() < next_sweep_) return;
  const auto start = Clock::now();
  absl::Status s =
      workspace::StripPrivilegeBits(scan_snapshot_->roots, scan_snapshot_->since,
                                    workspace::ScanLimits{}, &stripped_, &handed_back_);
  next_sweep_ = Clock::now() + (Clock::now() - start) * kSweepDuty;
  if (!s.ok() && !sweep_error_reported_) {
    Say(absl::StrCat("workspace sweep: ", s.message()));
    sweep_error_reported_ = true;
  }
}

void SandboxWrites::CheckHeldPaths() {
  if (views_.has_value()) views_->Tick();
}

void SandboxWrites::SweepHeldPaths() {
  if (!views_.has_value() || Clock::now() < next_held_sweep_) return;
  const auto start = Clock::now();
  views_->Sweep();
  next_held_sweep_ = Clock::now() + (Clock::now() - start) * kSweepDuty;
}

void SandboxWrites::EndHeldPaths() {
  if (!views_.has_value()) return;
  const held::HeldReport report = views_->End();
  views_.reset();
  for (const std::string& line : held::HeldReportLines(report)) Say(line);
}

// At session end (the sandbox is gone): what the session wrote handed back
// to the workspace owner (rootful), setuid/setgid bits and file
// capabilities stripped, git directories the session planted or changed
// neutralised (moved aside under a quarantine name; docs/git-shadow.md),
// and the files editors and shells act on listed.
void SandboxWrites::ScanWorkspaceAtEnd() {
  if (!scan_snapshot_.has_value()) return;
  absl::StatusOr<workspace::ScanReport> report = workspace::ScanAtSessionEnd(*scan_snapshot_);
  if (!report.ok()) {
    Say(absl::StrCat(
        "WARNING: the end-of-session workspace scan failed: ", report.status().message(),
        ". Do not run git in the workspace before checking it for planted "
        "repositories"));
    return;
  }
  report->stripped.insert(report->stripped.begin(), stripped_.begin(), stripped_.end());
  for (const auto& [owner, n] : handed_back_) report->handed_back[owner] += n;
  for (const std::string& line : workspace::ReportLines(*report))
    Say(absl::StrCat("workspace: ", line));
}

}  // namespace lazaret::cli::session
