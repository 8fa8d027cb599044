// The ordered teardown of a session by its owner: when the command ends,
// or on SIGINT/SIGTERM/SIGHUP or a requested stop, or when the sidecar or the
// supervisor is lost, it removes the sandbox if it still runs, stops the
// router (our router hold first, so the sandbox's network closes before
// podman gets to it), detaches the session from lazaret-egressd,
// lazaret-netpolicyd, lazaret-brokerd and lazaret-mount-helper (best
// effort), imports the agent's commits (Git Shadow WriteBack) and scans what
// the sandbox could write; then the exit is reported, and the containers,
// the session directory (the env file, the router socket) and with it the
// registry's claim on the session go last. Runs in the session worker, as
// the user. What a dead owner left is cleaned by reap.h in the same order.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_TEARDOWN_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_TEARDOWN_H_

#include <sys/types.h>

#include <string>

#include "services/sessiond/session/live_session.h"

namespace lazaret::cli::session {

// Grace for the sandbox's processes when the session is torn down early.
inline constexpr int kSandboxStopGraceSeconds = 1;

// Ends what runs for `*session` and what the services hold for it, once
// its sandbox has exited or been removed: the router hold, the router
// process, then the egress proxy, the policy, the escalation endpoint and
// the persistent directories detached. The containers stay. Idempotent.
void CloseSession(LiveSession* session);

// CloseSession, then the sidecar with everything that depends on it (the
// sandbox, if it is still there), the session directory unless
// `keep_session_dir`, and - once nothing of the session is left - the
// registration. Idempotent.
void ReleaseSession(LiveSession* session, bool keep_session_dir = false);

// Everything after Supervise (supervise.h) returned `code` that the exit
// waits for: the sandbox removed if the session ended early, the terminal
// mode restored, CloseSession, the final write-back, the held paths
// captured and the end-of-session workspace scan; then why the session
// ended, said (console.h). Returns the exit code of `lazaret run`. The
// caller reports it, then calls ReleaseSession: the containers' removal
// (a podman call of ~200 ms) and the session directory's are not what the
// user waits for.
int EndSession(LiveSession* session, pid_t sandbox_pid, int code);

// Why the session ended when not by its command, for SessionExit.reason
// ("stopped by Terminated", "stopped when its client was gone"); empty when
// its command ended it.
std::string EndReason(const LiveSession& session);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_TEARDOWN_H_
