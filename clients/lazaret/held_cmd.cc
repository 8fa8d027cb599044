// `lazaret held [list|diff|apply|drop]`: the changes sessions of a profile
// made to files host programs act on, held in the profile instead of the
// folder (docs/operations.md "Held changes"). Runs in the user's terminal,
// as the user: resolves the profile through lazaret-configd the way
// `lazaret run` does (same workspace directory, --config and profile), so
// the store's key is the one the session used, then hands the verb to
// lazaret_held (held/command.h).
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/held/command.h"
#include "clients/lazaret/held/display.h"
#include "services/common/profile_paths/resolve_profile.h"
#include "services/sessiond/session/session_dir.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::cli {
namespace {

absl::StatusOr<std::string> Canonical(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return ErrnoStatus(absl::StrCat("resolving ", path), errno);
  }
  return std::string(resolved);
}

// The profile as `lazaret run` in `cwd` resolves it (lazaret-configd's
// ResolveProfile with the same selector), with the warnings about it on
// stderr. Only its name and directory are used: they key the held store.
absl::StatusOr<lazaret::config::v1::ResolvedProfile> ResolveHeldProfile(
    const std::string& runtime_dir, const std::string& cwd, const std::string& explicit_config,
    const std::string& profile) {
  return ::lazaret::config::ResolveProfileThroughConfigd(
      runtime_dir, cwd, explicit_config, profile, [](const std::string& line) {
        std::fprintf(stderr, "lazaret: %s\n", line.c_str());
      });
}

// Apply writes the folder's files that a running session has bound as
// views; the session would capture its view against a base the folder no
// longer has. A session directory whose record names this profile and
// workspace (or the directory `lazaret held` runs in) - live, or left by a
// dead CLI and not yet reaped (its views are captured by the reap) -
// refuses. The session directories are where
// `lazaret run` records profile and workspace for `ps` and `clean`.
absl::Status CheckNoSession(const std::string& runtime_dir, const std::string& profile,
                            const std::string& workspace, const std::string& cwd) {
  LAZ_ASSIGN_OR_RETURN(std::vector<session::FoundSession> found,
                       session::FindSessionDirs(runtime_dir));
  std::vector<std::string> live, dead;
  for (const session::FoundSession& f : found) {
    // A spare holds no view (it has no sandbox yet).
    if (f.spare) continue;
    if (!f.has_record) {
      // A session still starting has no record yet; its workspace is
      // unknown, so it counts while its owner lives.
      if (f.owner_alive) live.push_back(f.id);
      continue;
    }
    // The record names the directory `lazaret run` was started in; with
    // --worktree the store's workspace is the agent worktree instead.
    if (f.record.profile != profile ||
        (f.record.workspace != workspace && f.record.workspace != cwd)) {
      continue;
    }
    (f.owner_alive ? live : dead).push_back(f.id);
  }
  if (!live.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "session ", absl::StrJoin(live, ", "),
        " is running on this workspace with this profile; end it first (exit the agent, or "
        "lazaret stop ID), then apply"));
  }
  if (!dead.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("session ", absl::StrJoin(dead, ", "),
                     " ended without finishing; run `lazaret clean` first, then apply"));
  }
  return absl::OkStatus();
}

}  // namespace

int CmdHeld(const Context& ctx, const std::vector<std::string>& args) {
  absl::StatusOr<held::HeldArgs> a = held::ParseHeldArgs(args);
  if (!a.ok()) {
    std::fprintf(stderr, "lazaret held: %s\n%s", std::string(a.status().message()).c_str(),
                 held::kHeldUsage);
    return 2;
  }
  if (a->help) {
    std::fputs(held::kHeldUsage, stdout);
    return 0;
  }
  absl::StatusOr<std::string> cwd = Canonical(".");
  if (!cwd.ok()) {
    std::fprintf(stderr, "lazaret held: %s\n", std::string(cwd.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::string> workspace = a->workspace.empty() ? cwd : Canonical(a->workspace);
  if (!workspace.ok()) {
    std::fprintf(stderr, "lazaret held: %s\n", std::string(workspace.status().message()).c_str());
    return 1;
  }
  std::string explicit_config = a->explicit_config;
  if (char resolved[PATH_MAX];
      !explicit_config.empty() && realpath(explicit_config.c_str(), resolved) != nullptr) {
    explicit_config = resolved;
  }
  // The profile as `lazaret run` in this directory resolves it.
  absl::StatusOr<lazaret::config::v1::ResolvedProfile> profile =
      ResolveHeldProfile(ctx.runtime_dir, *cwd, explicit_config, a->profile);
  if (!profile.ok()) {
    std::fprintf(stderr, "lazaret held: %s\n", std::string(profile.status().message()).c_str());
    return 1;
  }
  held::HeldContext hc;
  hc.profile = profile->name();
  hc.profile_dir = profile->profile_dir();
  hc.workspace = *workspace;
  hc.interactive = isatty(STDIN_FILENO) == 1;
  hc.styled = ctx.stdout_is_tty;
  const std::string runtime_dir = ctx.runtime_dir;
  const std::string name = hc.profile;
  const std::string ws = hc.workspace;
  const std::string dir = *cwd;
  hc.check_no_session = [runtime_dir, name, ws, dir]() {
    return CheckNoSession(runtime_dir, name, ws, dir);
  };
  return held::RunHeld(*a, hc);
}

}  // namespace lazaret::cli
