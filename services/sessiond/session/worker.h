// The session worker: one process per session, `lazaret-sessiond
// --session-worker`, forked and execed by lazaret-sessiond (as the user who
// ran `lazaret up`) with the death signal SIGTERM. It reads one StartRequest
// from its control descriptor, plans and starts the session, registers
// itself as the session's owner with the supervisor, serves AttachService
// on the session's attach socket, supervises the session and tears it down
// in order, then exits.
//
// Trust: the StartRequest comes from lazaret-sessiond, which took it from a
// client of the same uid: its arguments are parsed and checked as `lazaret
// run`'s own, its environment supplies only the values a session may take
// from the caller (env.h). Attach clients must be of the same uid; their
// keys go to the sandbox as typed, their sizes are clamped.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_WORKER_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_WORKER_H_

#include <string>

namespace lazaret::cli::session {

struct WorkerOptions {
  std::string runtime_dir;
  std::string libexec_dir;
  int control_fd = 3;
};

// Runs one session worker to its end and returns the process's exit code
// (0 once the session ran and was torn down, whatever its command
// returned: the command's code goes to the attached clients; non-zero when
// the StartRequest could not be read). Precondition: no other thread
// exists yet.
int RunSessionWorker(const WorkerOptions& options);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_WORKER_H_
