// `lazaret run`: one agent session, from plan to teardown. Runs in the
// user's terminal, as the user, and drives podman itself (it needs the
// TTY). Asks lazaret-configd for the resolved profile (profile.h), plans
// the Git Shadow and the whole session (plan.h), then starts it (start.h),
// supervises it until the command ends or the session is stopped
// (supervise.h) and tears it down in order (teardown.h).
//
// Trust: the profile comes from lazaret-configd (already validated and
// canonicalised; host paths are still checked when they become mounts);
// the user's own environment supplies `env:VAR` values and $TERM. Nothing
// the sandbox writes is read here except through the Git Shadow's
// WriteBack and the workspace scan, which both distrust it
// (sandbox_writes.h).
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_RUNNER_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_RUNNER_H_

#include <string>

#include "services/sessiond/session/run_args.h"

namespace lazaret::cli::session {

struct SessionOptions {
  std::string runtime_dir;    // the private runtime directory (sockets, sessions)
  std::string libexec_dir;    // where lazaret-sandbox-init is
  std::string workspace_dir;  // the canonical current directory
  RunArgs args;
};

// Runs one session and returns the exit code of `lazaret run`: the
// command's own, kRunFailed when Lazaret or podman failed, 128+signal when
// stopped by a signal. With args.dry_run, prints the plan instead (nothing
// is started). Errors are said on stderr. Preconditions: the session
// signals are blocked (BlockSessionSignals, signals.h) and no other thread
// exists yet (it installs Lazaret's containers.conf with setenv).
int RunSession(const SessionOptions& options);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_RUNNER_H_
