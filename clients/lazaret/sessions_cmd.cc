// `lazaret ps [--json]`, `lazaret stop SESSION` and `lazaret clean [--session ID]`
// (which also has lazaret-mount-helper unmount the overlays no live session
// holds): the sessions of this Lazaret instance (this runtime directory).
// Runs in the user's terminal, as the user. These front-ends parse the
// arguments and print; lazaret-sessiond lists, stops and reaps the
// sessions (SessionService List, Stop, Reap). The session directories on
// disk (services/sessiond/session/session_dir.h, read only) are where a
// session whose worker died is found: its directory lock is no longer held.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "clients/lazaret/attach/sessiond_client.h"
#include "clients/lazaret/cli.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/help/help.h"
#include "clients/lazaret/persist/mount_client.h"
#include "clients/lazaret/persist/state_format.h"
#include "clients/lazaret/ps/listing.h"
#include "services/common/constants.h"
#include "services/sessiond/session/session_dir.h"

namespace lazaret::cli {
namespace {

namespace pb = ::lazaret::session::v1;

// What a reap did, on stdout.
void PrintLines(const std::vector<std::string>& lines) {
  for (const std::string& l : lines) std::printf("%s\n", l.c_str());
  std::fflush(stdout);
}

// The session directories whose owner (the session's worker) is gone: what
// a killed worker left for a reap.
absl::StatusOr<std::vector<session::FoundSession>> DeadSessionDirs(const std::string& runtime_dir) {
  absl::StatusOr<std::vector<session::FoundSession>> dirs = session::FindSessionDirs(runtime_dir);
  if (!dirs.ok()) return dirs.status();
  std::vector<session::FoundSession> dead;
  for (session::FoundSession& d : *dirs) {
    if (!d.owner_alive) dead.push_back(std::move(d));
  }
  return dead;
}

// `lazaret clean --session ID`: one session whose worker is gone. Exit 4
// (kCleanOwnerAliveExitCode) for a live one.
int CleanOneSession(const Context& ctx, const std::string& id) {
  if (!session::IsValidSessionId(id)) {
    std::fprintf(stderr,
                 "lazaret clean: '%s' is not a session id (12 lowercase hex digits, as lazaret ps "
                 "shows; --session takes the whole id)\n",
                 id.c_str());
    return 2;
  }
  attach::SessiondClient client(attach::SessiondSocket(ctx.runtime_dir));
  absl::StatusOr<std::vector<std::string>> notices = client.Reap(id);
  if (!notices.ok()) {
    if (absl::IsFailedPrecondition(notices.status())) {
      std::fprintf(stderr,
                   "lazaret clean: session %s is running; refusing to reap it (lazaret stop %s "
                   "ends it)\n",
                   id.c_str(), id.c_str());
      return kCleanOwnerAliveExitCode;
    }
    std::fprintf(stderr, "lazaret clean: %s\n", std::string(notices.status().message()).c_str());
    return 1;
  }
  PrintLines(*notices);
  if (notices->empty()) std::printf("session %s: nothing left to reap\n", id.c_str());
  return 0;
}

}  // namespace

int CmdPs(const Context& ctx, const std::vector<std::string>& args) {
  bool json = false;
  if (std::optional<int> exit_code =
          ParseJsonFlag("ps", args, help::kPsHelp, help::kPsUsage, &json)) {
    return *exit_code;
  }
  attach::SessiondClient client(attach::SessiondSocket(ctx.runtime_dir));
  absl::StatusOr<pb::ListResponse> answer = client.ListAll();
  if (!answer.ok()) {
    std::fprintf(stderr, "lazaret ps: %s\n", std::string(answer.status().message()).c_str());
    return 1;
  }
  const std::vector<pb::SessionInfo> live(answer->sessions().begin(), answer->sessions().end());
  absl::StatusOr<std::vector<session::FoundSession>> dirs =
      session::FindSessionDirs(ctx.runtime_dir);
  if (!dirs.ok()) {
    std::fprintf(stderr, "lazaret ps: %s\n", std::string(dirs.status().message()).c_str());
    return 1;
  }
  const std::vector<ps::Row> rows = ps::Rows(live, *dirs);
  if (json) {
    std::printf("%s\n",
                ps::Json(rows, {answer->spares().begin(), answer->spares().end()}).c_str());
    return 0;
  }
  for (const std::string& line : ps::TableLines(rows, static_cast<int64_t>(time(nullptr)))) {
    std::printf("%s\n", line.c_str());
  }
  for (const ps::Row& r : rows) {
    if (r.orphaned) {
      std::printf("Orphaned sessions were left by a killed lazaret; run: lazaret clean\n");
      break;
    }
  }
  return 0;
}

int CmdStop(const Context& ctx, const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    std::fputs(help::kStopUsage, stderr);
    return 2;
  }
  attach::SessiondClient client(attach::SessiondSocket(ctx.runtime_dir));
  absl::StatusOr<std::vector<pb::SessionInfo>> live = client.List();
  if (!live.ok()) {
    std::fprintf(stderr, "lazaret stop: %s\n", std::string(live.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<pb::SessionInfo> s = attach::ChooseSession(*live, args[0]);
  if (!s.ok() && absl::IsNotFound(s.status())) {
    // Not running: a session whose worker died is reaped instead.
    absl::StatusOr<std::vector<session::FoundSession>> dead = DeadSessionDirs(ctx.runtime_dir);
    if (dead.ok()) {
      std::vector<std::string> hits;
      for (const session::FoundSession& d : *dead) {
        if (d.id.rfind(args[0], 0) == 0) hits.push_back(d.id);
      }
      if (hits.size() == 1) return CleanOneSession(ctx, hits[0]);
    }
  }
  if (!s.ok()) {
    std::fprintf(stderr, "lazaret stop: %s\n", std::string(s.status().message()).c_str());
    return 1;
  }
  // The session ends in order - the sandbox, the last write-back, the
  // workspace scan - before this answers; its attached terminals get the
  // teardown's lines.
  if (absl::Status st = client.Stop(s->id(), /*wait=*/true); !st.ok()) {
    std::fprintf(stderr, "lazaret stop: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  std::printf("stopped session %s\n", s->id().c_str());
  return 0;
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
    std::fprintf(stderr, "lazaret clean: unexpected argument '%s'\n%s", args[0].c_str(),
                 help::kCleanUsage);
    return 2;
  }
  attach::SessiondClient client(attach::SessiondSocket(ctx.runtime_dir));
  absl::StatusOr<std::vector<pb::SessionInfo>> live = client.List();
  if (!live.ok()) {
    std::fprintf(stderr, "lazaret clean: %s\n", std::string(live.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::vector<session::FoundSession>> dead = DeadSessionDirs(ctx.runtime_dir);
  if (!dead.ok()) {
    std::fprintf(stderr, "lazaret clean: %s\n", std::string(dead.status().message()).c_str());
    return 1;
  }
  std::set<std::string> running;
  for (const pb::SessionInfo& s : *live) running.insert(s.id());
  bool ok = true;
  int reaped = 0;
  for (const session::FoundSession& d : *dead) {
    if (running.count(d.id) != 0) continue;
    absl::StatusOr<std::vector<std::string>> notices = client.Reap(d.id);
    if (!notices.ok()) {
      // A worker that took the session back meanwhile, or a reap that
      // failed: said, and the rest of clean stands.
      std::printf("session %s: %s\n", d.id.c_str(),
                  std::string(notices.status().message()).c_str());
      ok = ok && absl::IsFailedPrecondition(notices.status());
      continue;
    }
    PrintLines(*notices);
    ++reaped;
  }
  // Then the overlays no live session holds (a killed session's): the
  // helper down is said, and the rest of clean stands.
  const int unmounted = CleanOverlays(ctx);
  if (reaped == 0 && unmounted <= 0) std::printf("Nothing to clean.\n");
  if (!running.empty()) {
    std::printf("%zu live session%s left alone (lazaret stop SESSION ends one).\n", running.size(),
                running.size() == 1 ? "" : "s");
  }
  return ok ? 0 : 1;
}

}  // namespace lazaret::cli
