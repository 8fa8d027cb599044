// The ordered teardown of a session by its owner: when the command ends,
// or on SIGINT/SIGTERM/SIGHUP or a requested stop, or when the sidecar or the
// supervisor is lost, it removes the sandbox and the sidecar (our router
// hold first, so the sandbox's network closes before podman gets to it),
// then detaches the session from lazaret-netpolicyd, lazaret-brokerd and
// lazaret-mount-helper (best effort), imports the agent's commits (Git Shadow WriteBack), scans
// what the sandbox could write; the session directory (the env file, the router socket) and with it
// the registry's claim on the session go last. Runs in the session worker, as the user. What a dead
// owner left is cleaned by reap.h in the same order.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_TEARDOWN_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_TEARDOWN_H_

#include <sys/types.h>

#include <string>

#include "services/sessiond/session/live_session.h"

namespace lazaret::cli::session {

// Grace for the sandbox's processes when the session is torn down early.
inline constexpr int kSandboxStopGraceSeconds = 1;

// Releases what `*session` holds: the router hold, the router process, the
// sidecar with everything that depends on it (the sandbox, if it is still
// there), the session directory unless `keep_session_dir`, and - once
// nothing of the session is left - the registration. Idempotent.
void ReleaseSession(LiveSession* session, bool keep_session_dir = false);

// Everything after Supervise (supervise.h) returned `code`: the sandbox
// removed if the session ended early, the terminal mode restored, the
// sidecar removed, the final write-back and the end-of-session workspace
// scan, the session directory; then why the session ended, said
// (console.h). Returns the exit code of `lazaret run`.
int EndSession(LiveSession* session, pid_t sandbox_pid, int code);

// Why the session ended when not by its command, for SessionExit.reason
// ("stopped by Terminated", "stopped when its client was gone"); empty when
// its command ended it.
std::string EndReason(const LiveSession& session);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_TEARDOWN_H_
