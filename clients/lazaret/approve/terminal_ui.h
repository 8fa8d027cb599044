// The ncurses front-end of the terminal approver: draws Model's screen on
// the controlling terminal, turns key presses into Keys, streams
// WatchPending on a reader thread (events reach the UI thread through a
// self-pipe) and makes the calls the model asks for. Runs in the `lazaret`
// CLI, as the user (lazaret approve). Nothing from the sandbox is written
// to the terminal except through display_text.h's runs; the terminal is
// restored on every way out (q, Ctrl-C, SIGINT/SIGTERM/SIGHUP, an error).
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_TERMINAL_UI_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_TERMINAL_UI_H_

#include <string>

#include "absl/status/status.h"
#include "clients/lazaret/approve/approver_client.h"

namespace lazaret::cli::approve {

struct TerminalOptions {
  // Watch only this session; empty: every session.
  std::string session_id;
  // The terminal to draw on and read keys from.
  std::string tty_path = "/dev/tty";
  // Colours for the marked text (when the terminal has them); reverse
  // video marks it either way. False when NO_COLOR is set.
  bool color = true;
  // Told to the broker (Approver.tty): ttyname(0), may be empty.
  std::string tty_name;
};

// Runs until the user quits. Precondition: no other thread uses ncurses.
absl::Status RunTerminalUi(ApproverClient& client, const TerminalOptions& options);

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_TERMINAL_UI_H_
