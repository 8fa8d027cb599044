// `lazaret ps`, `lazaret stop SESSION` and `lazaret clean [--session ID]`:
// the sessions of this Lazaret instance (this runtime directory), found by
// their session directories and by the labels on their containers. Runs in
// the user's terminal, and `clean --session` also in the supervisor's
// reaper (services/supervisor/reaper.h) when a session's owner died. A
// session whose directory lock is held belongs to a live `lazaret run` and
// is left to it (stop asks the supervisor's registry, which signals that
// process through the pidfd it holds - never a pid read from a file);
// anything else is what a crashed or killed CLI left behind.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/git_shadow.h"
#include "clients/lazaret/git_shadow_fs.h"
#include "clients/lazaret/podman.h"
#include "clients/lazaret/session.h"
#include "clients/lazaret/workspace_scan.h"
#include "services/common/constants.h"

namespace lazaret::cli {
namespace {

constexpr auto kStopTimeout = std::chrono::seconds(30);

// Everything known about one session id.
struct SessionView {
  std::string id;
  std::optional<FoundSession> dir;
  std::vector<ContainerInfo> containers;

  bool owner_alive() const { return dir.has_value() && dir->owner_alive; }
  std::string profile() const {
    if (dir.has_value() && dir->has_record) return dir->record.profile;
    for (const auto& c : containers) {
      if (!c.profile.empty()) return c.profile;
    }
    return "?";
  }
  int64_t started() const {
    if (dir.has_value() && dir->has_record) return dir->record.started_unix;
    int64_t t = 0;
    for (const auto& c : containers) {
      if (t == 0 || (c.created_unix != 0 && c.created_unix < t)) t = c.created_unix;
    }
    return t;
  }
  std::string ContainerState(const char* role) const {
    for (const auto& c : containers) {
      if (c.role == role) return c.state;
    }
    return "-";
  }
  std::string state() const {
    if (!owner_alive()) return "orphaned";
    const std::string sandbox = ContainerState(kRoleSandbox);
    if (sandbox == "running") return "running";
    if (sandbox == "-") return "starting";
    return sandbox;
  }
};

// Sessions of this runtime directory, by id.
absl::StatusOr<std::map<std::string, SessionView>> CollectSessions(const Context& ctx) {
  std::map<std::string, SessionView> out;
  absl::StatusOr<std::vector<FoundSession>> dirs = FindSessionDirs(ctx.runtime_dir);
  if (!dirs.ok()) return dirs.status();
  for (FoundSession& d : *dirs) {
    SessionView& v = out[d.id];
    v.id = d.id;
    v.dir = std::move(d);
  }
  absl::StatusOr<std::vector<ContainerInfo>> containers = ListLazaretContainers();
  if (!containers.ok()) return containers.status();
  for (ContainerInfo& c : *containers) {
    // Another instance's container (another runtime directory): not ours.
    if (c.runtime_dir != ctx.runtime_dir || !IsValidSessionId(c.session)) continue;
    SessionView& v = out[c.session];
    v.id = c.session;
    v.containers.push_back(std::move(c));
  }
  return out;
}

std::string Age(int64_t started) {
  if (started <= 0) return "?";
  const int64_t s = static_cast<int64_t>(time(nullptr)) - started;
  if (s < 0) return "0s";
  if (s < 120) return absl::StrCat(s, "s");
  if (s < 7200) return absl::StrCat(s / 60, "m");
  if (s < 172800) return absl::StrCat(s / 3600, "h");
  return absl::StrCat(s / 86400, "d");
}

void PrintWriteBacks(
    const absl::StatusOr<std::vector<std::pair<WriteBackTarget, WriteBackReport>>>& all) {
  if (!all.ok()) {
    std::printf("  git write-back failed: %s\n", std::string(all.status().message()).c_str());
    return;
  }
  for (const auto& [target, report] : *all) {
    for (const auto& s : report.imported) {
      std::printf("  git: imported %s into %s\n", s.c_str(), target.host_common_dir.c_str());
    }
    for (const auto& s : report.conflicts) std::printf("  git: conflict: %s\n", s.c_str());
    for (const auto& s : report.rejected) std::printf("  git: not imported: %s\n", s.c_str());
    for (const auto& s : report.removed) std::printf("  git: removed: %s\n", s.c_str());
    if (!report.import_status.ok()) {
      std::printf("  git: import failed: %s\n",
                  std::string(report.import_status.message()).c_str());
    }
  }
}

// The workspace scan snapshot a session recorded before its sandbox
// started (workspace_scan.h), if any.
std::optional<GitDirSnapshot> ReadSnapshot(const std::string& session_path) {
  absl::StatusOr<DirFd> dir = DirFd::Open(session_path);
  if (!dir.ok()) return std::nullopt;
  absl::StatusOr<std::string> text = ReadRegularFileAt(*dir, kSnapshotFileName, 256ull << 20);
  if (!text.ok()) return std::nullopt;
  absl::StatusOr<GitDirSnapshot> snap = ParseSnapshot(*text);
  if (!snap.ok()) {
    std::printf("  WARNING: the session's workspace snapshot is unreadable (%s)\n",
                std::string(snap.status().message()).c_str());
    return std::nullopt;
  }
  return *std::move(snap);
}

// The end-of-session workspace scan the dead session never ran: privilege
// bits stripped, planted repositories neutralised, editor files listed.
void ScanWorkspace(const SessionView& v, const std::optional<GitDirSnapshot>& snap) {
  if (!snap.has_value()) {
    if (v.dir.has_value() && v.dir->has_record) {
      std::printf(
          "  WARNING: no workspace snapshot for this session: %s was not checked for planted git "
          "repositories or setuid files; do not run git there before looking\n",
          v.dir->record.workspace.c_str());
    }
    return;
  }
  absl::StatusOr<ScanReport> report = ScanAtSessionEnd(*snap);
  if (!report.ok()) {
    std::printf("  WARNING: the workspace scan failed: %s\n",
                std::string(report.status().message()).c_str());
    return;
  }
  for (const std::string& line : ReportLines(*report)) {
    std::printf("  workspace: %s\n", line.c_str());
  }
}

// Removes what a dead session left, in the order that keeps the agent's
// work: its containers (by name, so a reap needs no listing: the sidecar
// with everything in its network namespace, then any other container of
// the session), then the Git Shadow write-back and the end-of-session
// workspace scan it never did, and its directory last - so a reap cut short
// is simply done again.
bool Reap(const SessionView& v) {
  bool ok = true;
  std::printf("session %s (profile %s):\n", v.id.c_str(), v.profile().c_str());
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
      std::printf("  %s\n", std::string(s.message()).c_str());
      ok = false;
    }
  }
  for (const auto& c : v.containers) {
    std::printf("  removed container %s (%s)\n", c.name.c_str(), c.state.c_str());
  }
  if (!v.dir.has_value()) return ok;
  if (v.dir->has_record && !v.dir->record.git_state_dir.empty()) {
    PrintWriteBacks(WriteBackAll(v.dir->record.git_state_dir));
  }
  if (ok) {
    ScanWorkspace(v, ReadSnapshot(v.dir->path));
  } else {
    std::printf(
        "  workspace scan not run while the session's containers may remain; run lazaret "
        "clean again\n");
  }
  if (!ok) return false;
  if (absl::Status s = RemoveSessionTree(v.dir->path); !s.ok()) {
    std::printf("  %s\n", std::string(s.message()).c_str());
    return false;
  }
  std::printf("  removed %s\n", v.dir->path.c_str());
  return true;
}

// The session an argument names: the full id or a unique prefix.
absl::StatusOr<SessionView> FindOne(const std::map<std::string, SessionView>& all,
                                    const std::string& arg) {
  std::vector<const SessionView*> hits;
  for (const auto& [id, v] : all) {
    if (absl::StartsWith(id, arg)) hits.push_back(&v);
  }
  if (arg.empty() || hits.empty()) {
    return absl::NotFoundError(absl::StrCat("no session '", arg, "' (see: lazaret ps)"));
  }
  if (hits.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", arg, "' matches ", hits.size(), " sessions; give more of the id"));
  }
  return *hits[0];
}

}  // namespace

int CmdPs(const Context& ctx, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "lazaret ps: unexpected argument '%s'\nusage: lazaret ps\n",
                 args[0].c_str());
    return 2;
  }
  absl::StatusOr<std::map<std::string, SessionView>> all = CollectSessions(ctx);
  if (!all.ok()) {
    std::fprintf(stderr, "lazaret ps: %s\n", std::string(all.status().message()).c_str());
    return 1;
  }
  std::printf("%-13s %-20s %-10s %-6s %-8s %-8s %s\n", "SESSION", "PROFILE", "STATE", "AGE",
              "SANDBOX", "SIDECAR", "WORKSPACE");
  bool orphans = false;
  for (const auto& [id, v] : *all) {
    const std::string workspace =
        v.dir.has_value() && v.dir->has_record ? v.dir->record.workspace : "-";
    std::printf("%-13s %-20s %-10s %-6s %-8s %-8s %s\n", id.c_str(), v.profile().c_str(),
                v.state().c_str(), Age(v.started()).c_str(), v.ContainerState(kRoleSandbox).c_str(),
                v.ContainerState(kRoleSidecar).c_str(), workspace.c_str());
    orphans = orphans || !v.owner_alive();
  }
  if (orphans) std::printf("Orphaned sessions were left by a killed lazaret; run: lazaret clean\n");
  return 0;
}

int CmdStop(const Context& ctx, const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    std::fprintf(stderr,
                 "usage: lazaret stop SESSION   (the id, or a unique prefix, from "
                 "lazaret ps)\n");
    return 2;
  }
  absl::StatusOr<std::map<std::string, SessionView>> all = CollectSessions(ctx);
  if (!all.ok()) {
    std::fprintf(stderr, "lazaret stop: %s\n", std::string(all.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<SessionView> v = FindOne(*all, args[0]);
  if (!v.ok()) {
    std::fprintf(stderr, "lazaret stop: %s\n", std::string(v.status().message()).c_str());
    return 1;
  }
  if (v->owner_alive()) {
    // The owning `lazaret run` tears its session down itself (and imports
    // the agent's commits); the supervisor signals it through its pidfd.
    // Then wait until its directory is gone.
    absl::StatusOr<int> pid = StopRegisteredSession(ctx.runtime_dir, v->id);
    if (!pid.ok()) {
      std::fprintf(stderr, "lazaret stop: session %s: %s\n", v->id.c_str(),
                   std::string(pid.status().message()).c_str());
      return 1;
    }
    const auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
    while (SessionOwnerAlive(v->dir->path)) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "lazaret stop: session %s is still stopping after %lld s\n",
                     v->id.c_str(), static_cast<long long>(kStopTimeout.count()));
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::printf("stopped session %s\n", v->id.c_str());
    return 0;
  }
  return Reap(*v) ? 0 : 1;
}

// `lazaret clean --session ID`: one session whose owner is dead, in the
// order that keeps the agent's work: containers first (fast: by name, one
// podman call for the sidecar and everything in its namespace), then the
// Git Shadow write-back, and the session directory last - so a reap cut
// short is simply done again. Exit 4 (kCleanOwnerAliveExitCode) for a live owner.
int CleanOneSession(const Context& ctx, const std::string& id) {
  if (!IsValidSessionId(id)) {
    std::fprintf(stderr,
                 "lazaret clean: '%s' is not a session id (12 lowercase hex digits, as lazaret ps "
                 "shows; --session takes the whole id)\n",
                 id.c_str());
    return 2;
  }
  const std::string path = SessionPath(ctx.runtime_dir, id);
  if (SessionOwnerAlive(path)) {
    std::fprintf(stderr,
                 "lazaret clean: session %s belongs to a live lazaret run; refusing to reap it "
                 "(lazaret stop %s ends it)\n",
                 id.c_str(), id.c_str());
    return kCleanOwnerAliveExitCode;
  }
  absl::StatusOr<std::vector<FoundSession>> dirs = FindSessionDirs(ctx.runtime_dir);
  if (!dirs.ok()) {
    std::fprintf(stderr, "lazaret clean: %s\n", std::string(dirs.status().message()).c_str());
    return 1;
  }
  std::optional<FoundSession> dir;
  for (FoundSession& d : *dirs) {
    if (d.id == id) dir = std::move(d);
  }
  if (!dir.has_value()) {
    // No directory: only containers carrying this instance's labels.
    absl::StatusOr<std::map<std::string, SessionView>> all = CollectSessions(ctx);
    if (!all.ok()) {
      std::fprintf(stderr, "lazaret clean: %s\n", std::string(all.status().message()).c_str());
      return 1;
    }
    auto it = all->find(id);
    if (it == all->end()) {
      std::printf("session %s: nothing left to reap\n", id.c_str());
      return 0;
    }
    return Reap(it->second) ? 0 : 1;
  }
  if (dir->owner_alive) {
    std::fprintf(stderr, "lazaret clean: session %s belongs to a live lazaret run\n", id.c_str());
    return kCleanOwnerAliveExitCode;
  }
  SessionView view;
  view.id = id;
  view.dir = *std::move(dir);
  const bool ok = Reap(view);
  std::fflush(stdout);
  return ok ? 0 : 1;
}

int CmdClean(const Context& ctx, const std::vector<std::string>& args) {
  if (args.size() == 2 && args[0] == "--session") return CleanOneSession(ctx, args[1]);
  if (!args.empty()) {
    std::fprintf(stderr,
                 "lazaret clean: unexpected argument '%s'\nusage: lazaret clean [--session ID]\n",
                 args[0].c_str());
    return 2;
  }
  absl::StatusOr<std::map<std::string, SessionView>> all = CollectSessions(ctx);
  if (!all.ok()) {
    std::fprintf(stderr, "lazaret clean: %s\n", std::string(all.status().message()).c_str());
    return 1;
  }
  int reaped = 0, live = 0;
  bool ok = true;
  for (const auto& [id, v] : *all) {
    if (v.owner_alive()) {
      ++live;
      continue;
    }
    ok = Reap(v) && ok;
    ++reaped;
  }
  if (reaped == 0) std::printf("Nothing to clean.\n");
  if (live > 0) {
    std::printf("%d live session%s left alone (lazaret stop SESSION ends one).\n", live,
                live == 1 ? "" : "s");
  }
  return ok ? 0 : 1;
}

}  // namespace lazaret::cli
