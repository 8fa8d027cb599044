// The attach client of `lazaret run` and `lazaret attach`: one terminal (or
// one set of pipes) attached to a session's AttachService (its worker's
// attach socket, <session dir>/attach.sock) until the session ends or the
// developer detaches.
//
// A tty session: the developer's terminal is in raw mode while attached,
// every key goes to the session except the detach prefix (detach_keys.h:
// Ctrl-\ d detaches, Ctrl-\ i takes the input), SIGWINCH sends the new
// size, and the session's output is written as it comes, its modes tracked
// (terminal_modes.h) so that a detach or the inline approver's prompt can
// switch them off and a resume can put them back. Detaching - the key,
// SIGHUP, SIGTERM, stdin closed - leaves the alternate screen, switches
// off the modes the agent set, reads away the answers the terminal still
// owes the agent (a DA1 request and its answer, bounded), restores the
// terminal mode and says how to attach again; the session keeps running.
// A stream session: stdin is sent as it is read (its end too), stdout and
// stderr are written apart (through the terminal policy's filter where
// they are a terminal: the worker does not filter streams); SIGINT, SIGTERM and SIGHUP stop the session
// cleanly and the client exits 128+signal once it has ended.
//
// Runs in the `lazaret` CLI, as the user. The worker is a process of the
// same user and trusted for the protocol; the output bytes are the
// sandbox's, already filtered by the worker's terminal policy
// (services/terminal/output_filter.h): written, scanned for modes, never
// answered.
#ifndef LAZARET_CLIENTS_LAZARET_ATTACH_ATTACH_CLIENT_H_
#define LAZARET_CLIENTS_LAZARET_ATTACH_ATTACH_CLIENT_H_

#include <signal.h>
#include <unistd.h>

#include <string>

namespace lazaret::cli::attach {

// The signals the attach loop takes synchronously (SIGINT, SIGTERM, SIGHUP,
// SIGWINCH). Precondition: called before any thread exists (gRPC creates
// some on the first call), so that every thread inherits the mask.
void BlockAttachSignals();

struct AttachOptions {
  // "lazaret run" or "lazaret attach": the prefix of the client's messages.
  std::string program = "lazaret attach";
  std::string session_id;
  std::string attach_socket;
  std::string runtime_dir;
  // Whether the session has a pty (SessionInfo.tty): keys and one screen;
  // otherwise stdin, stdout and stderr are streams.
  bool tty_session = true;
  // Hello: take the input now (false: watch), replay what the session
  // shows (a re-attach; a fresh `lazaret run` has seen nothing yet).
  bool take_input = true;
  bool replay = true;
  // The inline approver (clients/lazaret/approve/inline_approver.h) runs
  // in this terminal while attached, when it is a tty session and the
  // session's AttachState says its requests may be decided in a terminal
  // (escalation or egress = "ask" on, no remote approver asked for);
  // false keeps it off here whatever the session says.
  bool inline_approver = true;
  int in_fd = STDIN_FILENO;
  int out_fd = STDOUT_FILENO;
  int err_fd = STDERR_FILENO;
};

// Attaches and runs until the session ends (its command's exit code, after
// the teardown's notices), the developer detaches (0), or the session is
// lost (125, said on err_fd). Precondition: BlockAttachSignals ran.
int RunAttached(const AttachOptions& options);

}  // namespace lazaret::cli::attach

#endif  // LAZARET_CLIENTS_LAZARET_ATTACH_ATTACH_CLIENT_H_
