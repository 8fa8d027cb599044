// Supervising a started session until its command ends: a
// tick every 2 s that writes the agent's commits back (Git Shadow), sweeps
// setuid bits and file capabilities every few ticks, and ends the session
// when the network sidecar's router is gone (pidfd) or stops answering, or
// when the supervisor no longer knows the session; in between it waits for
// SIGINT, SIGTERM or SIGHUP, a stop asked for by an attached terminal
// (LiveSession::stops), and the moment the profile's [session] rule stops
// an unattended session (on_detach, detached_limit_seconds; a stream
// session when its client is gone: attach_hub.h). Each of these is the same
// clean stop. Runs in the session worker (lazaret-sessiond
// --session-worker, as the user), with the session signals blocked
// (signals.h). Nothing the sandbox writes is
// read here except through sandbox_writes.h.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_SUPERVISE_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_SUPERVISE_H_

#include <sys/types.h>

#include "services/sessiond/session/live_session.h"

namespace lazaret::cli::session {

// Waits for the sandbox's podman client `sandbox_pid` and returns its exit
// code; or returns early, with the cause in `*session` (stop_signal and
// 128+signal, with stop_reason for a requested or unattended stop;
// sidecar_lost or supervisor_lost and kRunFailed), leaving the
// sandbox to the teardown.
int Supervise(LiveSession* session, pid_t sandbox_pid);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_SUPERVISE_H_
