#include "services/sessiond/session/runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/escalation/endpoint.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/sessiond/session/console.h"
#include "services/sessiond/session/dry_run.h"
#include "services/sessiond/session/env.h"
#include "services/sessiond/session/live_session.h"
#include "services/sessiond/session/mounts.h"
#include "services/sessiond/session/plan.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/session/profile.h"
#include "services/sessiond/session/session_dir.h"
#include "services/sessiond/session/start.h"
#include "services/sessiond/session/supervise.h"
#include "services/sessiond/session/teardown.h"
#include "services/sessiond/session/terminal.h"
#include "services/common/status_util.h"

namespace lazaret::cli::session {
namespace {

int Fail(LiveSession* s, const absl::Status& status) {
  std::fprintf(stderr, "lazaret run: %s\n", std::string(status.message()).c_str());
  ReleaseSession(s);
  return kRunFailed;
}

// The profile, then everything on the host the plan is made of, then the
// plan. Planning the Git Shadow may create the agent branch and the state
// directories, also for --dry-run.
absl::Status Plan(const SessionOptions& o, LiveSession* s) {
  Trace("start");
  LAZ_ASSIGN_OR_RETURN(s->profile, ResolveProfile(o.runtime_dir, o.workspace_dir,
                                                  o.args.explicit_config, o.args.profile));
  LAZ_RETURN_IF_ERROR(
      RecheckProfileHostPaths(s->profile, o.runtime_dir, o.workspace_dir, o.args.explicit_config));
  Trace("profile resolved");
  PlanInputs in;
  // Environment first: an unset env:VAR refuses before anything exists.
  LAZ_ASSIGN_OR_RETURN(in.profile_env, ResolveProfileEnv(s->profile, HostEnv));

  // Never a weaker runtime, never the host.
  absl::StatusOr<std::string> runsc = FindRunsc();
  if (!runsc.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to start: ", runsc.status().message(),
        ". Lazaret runs agents only under gVisor and never falls back to runc or to the host."));
  }
  LAZ_ASSIGN_OR_RETURN(in.runc_path, FindRunc());
  in.runsc_path = *std::move(runsc);
  in.sandbox_init_host = absl::StrCat(o.libexec_dir, "/lazaret-sandbox-init");
  if (access(in.sandbox_init_host.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        in.sandbox_init_host,
        " is missing; build Lazaret (ninja lazaret-sandbox-init) or set LAZARET_LIBEXEC_DIR"));
  }
  if (s->profile.escalation().enabled()) {
    in.escalate_client_host = absl::StrCat(o.libexec_dir, "/lazaret-escalate");
    if (access(in.escalate_client_host.c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          in.escalate_client_host,
          " is missing; build Lazaret (ninja lazaret-escalate) or set LAZARET_LIBEXEC_DIR, or set "
          "[escalation] enabled = false to run without host escalation"));
    }
  }
  in.terminal = DetectTerminal();

  // The Git Shadow (gitshadow/plan.h).
  gitshadow::GitShadowRequest greq;
  greq.workspace_dir = o.workspace_dir;
  greq.profile = s->profile.name();
  greq.state_dir = GitStateDir(s->profile);
  greq.branch = o.args.branch;
  greq.worktree_mode = o.args.worktree;
  LAZ_ASSIGN_OR_RETURN(gitshadow::GitShadowPlan git, gitshadow::PlanGitShadow(greq));
  Trace("git shadow planned");
  for (const auto& n : git.notices) Say(n);

  in.session_id = NewSessionId();
  in.escalation_certs_dir = escalation::ExpectedCertsDir(geteuid(), in.session_id);
  in.runtime_dir = o.runtime_dir;
  in.workspace_dir = o.workspace_dir;
  in.rootless = Rootless();
  in.command = o.args.command;
  LAZ_ASSIGN_OR_RETURN(s->plan, PlanSession(in, s->profile, git));
  s->writes.set_git(std::move(git));
  return absl::OkStatus();
}

}  // namespace

int RunSession(const SessionOptions& o) {
  // Every podman this session starts reads only Lazaret's containers.conf.
  // setenv before any thread exists. Without the runtime directory Lazaret
  // is not up, which the profile request below reports.
  if (struct stat st{}; stat(o.runtime_dir.c_str(), &st) == 0) {
    if (absl::Status s = InstallContainersConf(o.runtime_dir).status(); !s.ok()) {
      std::fprintf(stderr, "lazaret run: %s\n", std::string(s.message()).c_str());
      return kRunFailed;
    }
  }
  LiveSession s;
  s.runtime_dir = o.runtime_dir;
  s.workspace_dir = o.workspace_dir;
  s.explicit_config = o.args.explicit_config;
  s.approver = o.args.approver;
  s.ports = o.args.ports;
  if (absl::Status st = Plan(o, &s); !st.ok()) return Fail(&s, st);
  if (o.args.dry_run) {
    std::fputs(DryRunText(s.plan, o.runtime_dir, IsRealDirectory).c_str(), stdout);
    return 0;
  }
  absl::StatusOr<pid_t> pid = StartSession(&s);
  if (!pid.ok()) {
    if (s.stop_signal != 0) {
      ReleaseSession(&s);
      return 128 + s.stop_signal;
    }
    return Fail(&s, pid.status());
  }
  const int code = Supervise(&s, *pid);
  Trace("sandbox exited");
  return EndSession(&s, *pid, code);
}

}  // namespace lazaret::cli::session
