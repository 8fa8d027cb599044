// The signals a `lazaret run` session takes synchronously: SIGINT, SIGTERM
// and SIGHUP end the session in order (teardown, then exit 128+signal),
// SIGCHLD wakes the supervision loop. Runs in the `lazaret` CLI. Blocked
// before any thread exists, so gRPC's threads inherit the mask and none of
// them can die of a Ctrl-C before the session is torn down.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_SIGNALS_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_SIGNALS_H_

#include <signal.h>

namespace lazaret::cli::session {

// SIGINT, SIGTERM, SIGHUP and SIGCHLD.
sigset_t SessionSignals();

// Blocks SessionSignals in this thread. Precondition: no other thread
// exists yet (gRPC creates some on the first call).
void BlockSessionSignals();

// A termination signal that arrived (0 if none), without waiting.
int PendingTermination();

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_SIGNALS_H_
