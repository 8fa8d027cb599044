// Starting a planned session, in this order (FR-3): the
// session directory and its registration with the supervisor's session
// registry (fail closed: no supervisor, no session; it reaps the session
// if this process dies by any means), the env file, the persistent
// directories (the image resolved to its full id, lazaret-mount-helper's
// AttachSession mounting their overlays, its answer checked against the
// plan: without it nothing more starts), the network sidecar (runc), the wait until
// its router answers grpc.health.v1 on the session's router socket, the
// two holds on the router (this process's and the supervisor's, so that if
// both die the router closes the namespace at once), the egress policy
// (lazaret-netpolicyd's AttachSession: without an applied generation
// nothing more starts), the escalation endpoint when the profile enables it
// (lazaret-brokerd's AttachSession, its answer checked before it is
// mounted: without it nothing more starts), and only then the agent
// sandbox (runsc) in the sidecar's network namespace, on a pty of the
// worker's own or on pipes (sandbox_io.h), its output kept for the attached
// terminals (attach_hub.h). Runs in the session worker (lazaret-sessiond
// --session-worker, as the user), driving podman itself. Trusts the plan (plan.h) and re-checks the profile's host paths right before the
// sandbox starts; the router is trusted only to answer on its socket.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_START_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_START_H_

#include <sys/types.h>

#include "absl/status/statusor.h"
#include "services/sessiond/session/live_session.h"

namespace lazaret::cli::session {

// Starts what `session->plan` describes and returns the pid of the
// sandbox's podman client. On an error, what was already acquired is in
// `*session` for the teardown (teardown.h), and `session->stop_signal` is
// set when a termination signal cut the start short. session->hub_events
// must be set. Preconditions: the
// session signals are blocked (signals.h) and Lazaret's containers.conf is
// installed (podman.h).
absl::StatusOr<pid_t> StartSession(LiveSession* session);

// A spare (docs/architecture.md "Spare sidecar"), from a plan of
// PlanSpare: its session directory (marked spare) and registration, with
// escalation its endpoint, its sidecar and its router held - what
// StartSession skips once a request adopts it (session->adopted). No
// policy is applied: until then the router lets nothing through. On an
// error, what was acquired is in `*session` for ReleaseSession.
absl::Status PrepareSpare(LiveSession* session);

// The adopting request's check that the supervisor still knows the spare
// and its router still answers.
absl::Status CheckSpare(LiveSession* session);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_START_H_
