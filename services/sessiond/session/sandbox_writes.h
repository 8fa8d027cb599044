// What a running session's sandbox wrote, which this side distrusts: the
// Git Shadow write-back of the agent's commits (every tick while the
// sandbox runs and once at the end; gitshadow/sync.h) and the workspace scan
// of the trees it could write (a snapshot of the git directories before
// the sandbox starts, a setuid/capability sweep every few ticks, and at
// the end the neutralising of planted repositories; workspace/scan.h), and
// the held views of the paths host programs act on (held/view.h: new
// catalogue entries held and removed every tick and sweep, the views
// captured at the end).
// Runs in the session worker (lazaret-sessiond --session-worker) on the
// host, as the user who ran `lazaret up` (root for rootful
// podman). Everything read here was written by the agent and is read only
// through those two, which both distrust it.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_SANDBOX_WRITES_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_SANDBOX_WRITES_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/gitshadow/sync.h"
#include "services/sessiond/held/view.h"
#include "services/sessiond/workspace/snapshot.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli::session {

// What the Git Shadow imported or refused over the whole session, printed
// once at the end so the interactive terminal is not written over. The
// write-back runs every tick and an agent can make it fail or refuse the
// same thing every time, so each distinct line is kept once, and at most
// kMaxLines of them (then one line saying how many more there were).
class WriteBackLog {
 public:
  static constexpr size_t kMaxLines = 100;

  void Add(const absl::StatusOr<gitshadow::WriteBackReport>& r);
  // The lines as Print shows them (without "lazaret: git shadow: ").
  std::vector<std::string> Lines() const;
  void Print() const;

 private:
  void Line(std::string line);

  std::vector<std::string> lines_;
  std::set<std::string> seen_;
  size_t dropped_ = 0;
};

class SandboxWrites {
 public:
  // The session's Git Shadow plan (has_repo false: nothing to write back).
  void set_git(gitshadow::GitShadowPlan git) { git_ = std::move(git); }

  // The trees the sandbox can write (the workspace and the profile's rw
  // volumes), with the git directories in them, recorded before the sandbox
  // starts: in memory for the end of this session and in the session
  // directory `session_dir` for `lazaret clean` if this process dies.
  absl::Status Snapshot(const std::string& session_id, const std::string& workspace, bool rootless,
                        const lazaret::config::v1::ResolvedProfile& profile,
                        const std::string& session_dir);

  // One Git Shadow write-back; `final_attempt` at the session's end.
  void WriteBackNow(bool final_attempt);
  // After the final write-back: the repository's lease (gitshadow/state.h
  // AcquireLease) ends, so that the next session of the profile on the
  // same repository may start while this one's containers are removed.
  void ReleaseRepository();
  // The periodic setuid/setgid/capability sweep; skipped until the duty
  // cycle allows the next one.
  void SweepPrivilegeBits();
  // The end-of-session workspace scan (the sandbox is gone).
  void ScanWorkspaceAtEnd();

  // The held views (held/view.h), built once the session directory exists
  // and before the sandbox starts; their binds are in the plan.
  void set_views(held::SessionViews views) { views_.emplace(std::move(views)); }
  // Every tick: new catalogue entries at the workspace root and the watched
  // paths, held and removed from the folder.
  void CheckHeldPaths();
  // The whole tree, within the same duty cycle as the privilege sweep.
  void SweepHeldPaths();
  // At the end (the sandbox is gone, or never started): every view
  // captured into the held store, placeholders removed, the report printed.
  // Once; later calls do nothing.
  void EndHeldPaths();

  const WriteBackLog& write_back_log() const { return write_back_log_; }

 private:
  std::optional<gitshadow::GitShadowPlan> git_;
  WriteBackLog write_back_log_;
  // The workspace scan (workspace/snapshot.h): the git directories there when
  // the sandbox started, and what the periodic sweeps stripped and (rootful)
  // handed back to the workspace's owner.
  std::optional<workspace::GitDirSnapshot> scan_snapshot_;
  std::vector<std::string> stripped_;
  std::map<std::string, uint64_t> handed_back_;
  std::chrono::steady_clock::time_point next_sweep_{};
  bool sweep_error_reported_ = false;
  std::optional<held::SessionViews> views_;
  std::chrono::steady_clock::time_point next_held_sweep_{};
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_SANDBOX_WRITES_H_
