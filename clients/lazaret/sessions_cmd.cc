// `lazaret ps`, `lazaret stop SESSION` and `lazaret clean [--session ID]`
// (which also has lazaret-mount-helper unmount the overlays no live session
// holds):
// the sessions of this Lazaret instance (this runtime directory). Runs in
// the user's terminal, and `clean --session` also in the supervisor's
// reaper (services/supervisor/reaper.h) when a session's owner died. These
// front-ends parse the arguments and print; finding, stopping and reaping
// sessions is lazaret_session's (services/sessiond/session/listing.h,
// stop.h, reap.h). A session whose directory lock is held belongs to a live
// `lazaret run` and is left to it.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/persist/mount_client.h"
#include "clients/lazaret/persist/state_format.h"
#include "services/sessiond/session/listing.h"
#include "services/sessiond/session/names.h"
#include "services/sessiond/session/reap.h"
#include "services/sessiond/session/session_dir.h"
#include "services/sessiond/session/stop.h"
#include "services/common/constants.h"

namespace lazaret::cli {
namespace {

std::string Age(int64_t started) {
  if (started <= 0) return "?";
  const int64_t s = static_cast<int64_t>(time(nullptr)) - started;
  if (s < 0) return "0s";
  if (s < 120) return absl::StrCat(s, "s");
  if (s < 7200) return absl::StrCat(s / 60, "m");
  if (s < 172800) return absl::StrCat(s / 3600, "h");
  return absl::StrCat(s / 86400, "d");
}

// What a reap did, on stdout.
void PrintLine(const std::string& line) { std::printf("%s\n", line.c_str()); }

// `lazaret clean --session ID`: one session whose owner is dead. Exit 4
// (kCleanOwnerAliveExitCode) for a live owner.
int CleanOneSession(const Context& ctx, const std::string& id) {
  if (!session::IsValidSessionId(id)) {
    std::fprintf(stderr,
                 "lazaret clean: '%s' is not a session id (12 lowercase hex digits, as lazaret ps "
                 "shows; --session takes the whole id)\n",
                 id.c_str());
    return 2;
  }
  if (session::SessionOwnerAlive(session::SessionPath(ctx.runtime_dir, id))) {
    std::fprintf(stderr,
                 "lazaret clean: session %s belongs to a live lazaret run; refusing to reap it "
                 "(lazaret stop %s ends it)\n",
                 id.c_str(), id.c_str());
    return kCleanOwnerAliveExitCode;
  }
  absl::StatusOr<session::CleanOutcome> outcome =
      session::CleanDeadSession(ctx.runtime_dir, id, PrintLine);
  if (!outcome.ok()) {
    std::fprintf(stderr, "lazaret clean: %s\n", std::string(outcome.status().message()).c_str());
    return 1;
  }
  std::fflush(stdout);
  switch (*outcome) {
    case session::CleanOutcome::kReaped:
      return 0;
    case session::CleanOutcome::kReapFailed:
      return 1;
    case session::CleanOutcome::kNothingLeft:
      std::printf("session %s: nothing left to reap\n", id.c_str());
      return 0;
    case session::CleanOutcome::kOwnerAlive:
      std::fprintf(stderr, "lazaret clean: session %s belongs to a live lazaret run\n", id.c_str());
      return kCleanOwnerAliveExitCode;
  }
  return 1;
}

}  // namespace

int CmdPs(const Context& ctx, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "lazaret ps: unexpected argument '%s'\nusage: lazaret ps\n",
                 args[0].c_str());
    return 2;
  }
  absl::StatusOr<std::map<std::string, session::SessionView>> all =
      session::CollectSessions(ctx.runtime_dir);
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
                v.state().c_str(), Age(v.started()).c_str(),
                v.ContainerState(session::kRoleSandbox).c_str(),
                v.ContainerState(session::kRoleSidecar).c_str(), workspace.c_str());
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
  absl::StatusOr<std::map<std::string, session::SessionView>> all =
      session::CollectSessions(ctx.runtime_dir);
  if (!all.ok()) {
    std::fprintf(stderr, "lazaret stop: %s\n", std::string(all.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<session::SessionView> v = session::FindSession(*all, args[0]);
  if (!v.ok()) {
    std::fprintf(stderr, "lazaret stop: %s\n", std::string(v.status().message()).c_str());
    return 1;
  }
  if (v->owner_alive()) {
    if (absl::Status s = session::StopLiveSession(ctx.runtime_dir, *v); !s.ok()) {
      std::fprintf(stderr, "lazaret stop: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::printf("stopped session %s\n", v->id.c_str());
    return 0;
  }
  return session::ReapSession(*v, PrintLine) ? 0 : 1;
}

namespace {

// lazaret-mount-helper's Cleanup: what it unmounted, one line each. The
// number unmounted, or -1 when the helper could not be asked.
int CleanOverlays(const Context& ctx) {
  persist::MountClient client(persist::MountHelperSocket(ctx.runtime_dir));
  absl::StatusOr<::lazaret::mounthelper::v1::CleanupResponse> r = client.Cleanup();
  if (!r.ok()) {
    std::printf("Overlays not checked: %s\n", std::string(r.status().message()).c_str());
    return -1;
  }
  std::fputs(persist::CleanupText(*r).c_str(), stdout);
  return r->unmounted_size();
}

}  // namespace

int CmdClean(const Context& ctx, const std::vector<std::string>& args) {
  if (args.size() == 2 && args[0] == "--session") return CleanOneSession(ctx, args[1]);
  if (!args.empty()) {
    std::fprintf(stderr,
                 "lazaret clean: unexpected argument '%s'\nusage: lazaret clean [--session ID]\n",
                 args[0].c_str());
    return 2;
  }
  absl::StatusOr<session::CleanSummary> summary =
      session::CleanDeadSessions(ctx.runtime_dir, PrintLine);
  // Then the overlays no live session holds (a killed run's): the helper
  // down is said, and the rest of clean stands.
  const int unmounted = CleanOverlays(ctx);
  if (!summary.ok()) {
    std::fprintf(stderr, "lazaret clean: %s\n", std::string(summary.status().message()).c_str());
    return 1;
  }
  if (summary->reaped == 0 && unmounted <= 0) std::printf("Nothing to clean.\n");
  if (summary->live > 0) {
    std::printf("%d live session%s left alone (lazaret stop SESSION ends one).\n", summary->live,
                summary->live == 1 ? "" : "s");
  }
  return summary->ok ? 0 : 1;
}

}  // namespace lazaret::cli
