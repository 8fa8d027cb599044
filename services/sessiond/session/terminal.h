// The terminal a session's sandbox sees: whether it gets a TTY (the
// starting client's stdin and stdout are a terminal: StartRequest.terminal),
// which $TERM it sees and the host's compiled terminfo entry for it
// (terminfo.h). Runs in the session worker (lazaret-sessiond
// --session-worker, as the user); $TERM and the terminfo search variables
// come from the caller's environment (StartRequest.env) and $TERM is
// checked before it becomes part of a path.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_TERMINAL_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_TERMINAL_H_

#include <optional>
#include <string>

#include "services/sessiond/session/env.h"
#include "services/sessiond/session/terminfo.h"

namespace lazaret::cli::session {

struct TerminalSetup {
  bool tty = false;  // the caller's stdin and stdout are a terminal: the sandbox gets one
  // The caller's $TERM when tty and it is a valid terminfo name, else empty.
  std::string term;
  // Its compiled entry on the host, when there is one.
  std::optional<TerminfoEntry> terminfo;
};

// The terminal of a caller that has one (`tty`), from its environment
// (TERM, TERMINFO, TERMINFO_DIRS, HOME); says so when a valid $TERM has no
// entry on this host.
TerminalSetup CallerTerminal(bool tty, const HostEnvLookup& caller_env);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_TERMINAL_H_
