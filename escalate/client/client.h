// lazaret-escalate's one exchange with lazaret-brokerd (inside the sandbox,
// unprivileged): send one EscalateRequest, wait through Pending frames, print
// the host command's output and exit with its status. What the broker sends
// is parsed strictly; the output bytes are passed through unchanged.
#ifndef LAZARET_ESCALATE_CLIENT_CLIENT_H_
#define LAZARET_ESCALATE_CLIENT_CLIENT_H_

#include "escalate/client/options.h"

namespace lazaret::escalation::client {

// Runs the exchange; returns the process's exit status (exit_codes.h).
// Writes the host command's output to fds 1 and 2, notes to fd 2.
int Run(const Options& options);

}  // namespace lazaret::escalation::client

#endif  // LAZARET_ESCALATE_CLIENT_CLIENT_H_
