// The session side of held changes (docs/operations.md "Held changes"):
// every path host programs act on by themselves (the catalogue, the paths
// the host's git config names, the scripts their text names;
// services/sessiond/workspace/acted_on.h) is shown to the sandbox through a
// per-session VIEW, a copy bound read-write over /workspace/<rel>, so that
// what the agent writes there lands in the copy and never in the
// developer's folder. At the end the copy is compared with the host's
// version it started from and every difference goes to the profile's held
// store (store.h); catalogue entries the agent created outside any view are
// held and removed from the folder, while the session runs and at its end.
//
// Runs in the `lazaret` CLI on the host: `lazaret run` (before the sandbox
// starts, every supervision tick, the periodic sweep and the end) and
// `lazaret clean --session` (the supervisor's reap of a dead `run`), as the
// developer (root for rootful podman). Everything below the workspace and
// below the views is the agent's: it is reached one component at a time
// through O_NOFOLLOW descriptors, never through a symlink, and only regular
// files and symlinks are read (a symlink's target text, never followed).
// The session directory's `held/` (view/, base/, units) is Lazaret's own.
//
//   <session dir>/held/
//     units      lazaret.held.v1.SessionViews (binary): what the end needs
//     view/<rel> what /workspace/<rel> shows: the host's version, the held
//                store's changes on top; the agent writes here
//     base/<rel> the host's version when the session started
#ifndef LAZARET_SERVICES_SESSIOND_HELD_VIEW_H_
#define LAZARET_SERVICES_SESSIOND_HELD_VIEW_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clients/lazaret/held/store.h"
#include "services/podman/mount_spec.h"
#include "lazaret/held/v1/held.pb.h"

namespace lazaret::cli::held {

// A unit (a catalogue directory such as .vscode, or one file) is copied
// into a view only up to these; a larger one (a .direnv holding a
// virtualenv, a big .idea) is bound read-only from the host instead: the
// agent sees it and cannot change it.
inline constexpr uint64_t kMaxViewUnitBytes = 16ull << 20;
inline constexpr uint64_t kMaxViewUnitEntries = 5000;
// <session dir>/held and the units file in it.
inline constexpr char kHeldDirName[] = "held";
inline constexpr char kUnitsFileName[] = "units";

// What the session held (or could not), for the end-of-session lines.
struct HeldChange {
  std::string rel;
  Change change = Change::kChanged;
  std::string why;  // who acts on it ("Claude Code", "core.hooksPath (...)")
};

struct HeldReport {
  std::vector<HeldChange> held;  // one per path: the last change wins
  std::vector<std::string> problems;

  void Add(HeldChange change);
  void Problem(std::string line);
};

// The end-of-session lines (without "lazaret: "), every path escaped for the
// terminal: "held for review, not in your folder: N paths (created a,
// changed b, deleted c)", one line per path, the commands to review, apply
// or drop them; then each problem on its own line. Empty when nothing
// happened.
std::vector<std::string> HeldReportLines(const HeldReport& report);

struct ViewRequest {
  std::string session_id;
  std::string workspace;    // canonical host path bound at /workspace
  std::string profile_dir;  // the held store's profile
  std::string home;         // the developer's home ("~" in git config)
  std::string session_dir;  // <runtime_dir>/sessions/<id>, existing, Lazaret's
  bool rootless = false;
  // While the session runs, a new entry is taken only once nothing has
  // written it for this long: a file the agent is still writing (a
  // streamed download, a slow append) would otherwise be held cut short.
  std::chrono::milliseconds quiet_before_taking{2000};
};

class SessionViews {
 public:
  // Finds the workspace's acted-on paths and the store's held entries,
  // reduces them to units (the outermost catalogue instance each lies in),
  // builds each unit's view and base and records them (units file) before
  // any placeholder is made. `notices` receives what the developer should
  // read once at start (a unit bound read-only, a held file not shown).
  // An error (nothing may be started) for a unit podman cannot mount (a
  // ':' in its path) and for failures to create Lazaret's own files.
  static absl::StatusOr<SessionViews> Build(const ViewRequest& request,
                                            std::vector<std::string>* notices);
  // The views a session recorded in `session_dir` (for the reap of a dead
  // `run`). NotFound when it recorded none.
  static absl::StatusOr<SessionViews> Load(const std::string& session_dir, bool rootless);

  SessionViews(SessionViews&&) noexcept = default;
  SessionViews& operator=(SessionViews&&) noexcept = default;

  // The binds for the sandbox: view/<rel> read-write (or the host's entry
  // read-only), at /workspace/<rel>, sorted so a parent precedes a child.
  std::vector<BindMount> Mounts() const;

  // Every supervision tick: the workspace root's entries, the root-level
  // catalogue paths, and the watched units. A catalogue entry that is not a
  // unit is held (Change::kCreated) and removed from the folder, each file
  // once nothing has written it for 2 s (End takes everything); a watched
  // unit the agent replaced is held and the developer's version restored.
  void Tick();
  // The whole tree (bounded), for the periodic sweep; the caller keeps the
  // duty cycle.
  void Sweep();
  // At the end (the sandbox is gone): every unit captured (view against
  // base), watched units checked, one final sweep, placeholders removed,
  // then <session dir>/held. Returns everything held since Build or Load.
  HeldReport End();

  const HeldReport& report() const { return report_; }
  const lazaret::held::v1::SessionViews& state() const { return state_; }

 private:
  SessionViews() = default;

  absl::Status WriteUnits() const;
  bool IsUnitOrInside(const std::string& rel) const;
  // Holds the entry at `rel` of the workspace (every file below it for a
  // directory) as created, and removes it from the folder.
  void HoldAndRemove(const std::string& rel, const std::string& why);
  void CheckWatched(const lazaret::held::v1::SessionViews::Unit& unit);
  void CaptureView(const lazaret::held::v1::SessionViews::Unit& unit);
  void RemovePlaceholder(const lazaret::held::v1::SessionViews::Unit& unit);
  // `fresh_above`: a directory above `rel` changed in this session (a
  // rename of it carries older entries onto catalogue paths).
  void SweepDir(const fs::DirFd& dir, const std::string& rel, int depth, int max_depth,
                bool fresh_above, uint64_t* entries);
  // Whether `rel` or a directory above it (below the root) changed since
  // the views were built.
  bool ChangedInSession(const fs::DirFd& ws, const std::string& rel) const;

  std::string held_dir_;  // <session dir>/held
  bool rootless_ = false;
  lazaret::held::v1::SessionViews state_;
  std::set<std::string> unit_rels_;
  std::optional<Store> store_;
  HeldReport report_;
  std::set<std::string> reported_problems_;
  // End's passes take every entry; Tick's and Sweep's only those nothing
  // has written for quiet_ (ViewRequest::quiet_before_taking).
  bool final_pass_ = false;
  std::chrono::milliseconds quiet_{2000};
};

}  // namespace lazaret::cli::held

#endif  // LAZARET_SERVICES_SESSIOND_HELD_VIEW_H_
