// The signals a session worker takes synchronously: SIGINT, SIGTERM and
// SIGHUP end the session in order (teardown, then 128+signal), SIGCHLD and
// SIGUSR1 (a wake-up from another thread of the worker: a stop request from
// an attached terminal, a terminal attached or gone) wake the supervision
// loop. Runs in the session worker (lazaret-sessiond --session-worker).
// Blocked before any thread exists, so gRPC's threads inherit the mask and
// none of them can die of a signal before the session is torn down.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_SIGNALS_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_SIGNALS_H_

#include <signal.h>

namespace lazaret::cli::session {

// SIGINT, SIGTERM, SIGHUP, SIGCHLD and SIGUSR1.
sigset_t SessionSignals();

// Blocks SessionSignals in this thread. Precondition: no other thread
// exists yet (gRPC creates some on the first call).
void BlockSessionSignals();

// A termination signal that arrived (0 if none), without waiting.
int PendingTermination();

// From any thread: wakes the supervision loop (SIGUSR1 to this process,
// which stays pending until the loop takes it). Precondition:
// BlockSessionSignals ran before any thread existed.
void WakeSupervision();

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_SIGNALS_H_
