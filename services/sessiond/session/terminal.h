// The developer's terminal in a `lazaret run` session: whether the sandbox
// gets a TTY, which $TERM it sees and the host's compiled terminfo entry
// for it (terminfo.h), and the terminal mode, saved before the sandbox
// owns the terminal and restored after it is gone. Runs in the `lazaret`
// CLI on the host, in the developer's terminal; $TERM comes from the
// developer's own environment and is checked before it becomes part of a
// path.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_TERMINAL_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_TERMINAL_H_

#include <termios.h>

#include <optional>
#include <string>

#include "services/sessiond/session/terminfo.h"

namespace lazaret::cli::session {

struct TerminalSetup {
  bool tty = false;  // stdin and stdout are a terminal: the sandbox gets one
  // The host's $TERM when tty and it is a valid terminfo name, else empty.
  std::string term;
  // Its compiled entry on the host, when there is one.
  std::optional<TerminfoEntry> terminfo;
};

// Looks at stdin, stdout and $TERM, and for the terminfo entry; says so on
// stderr when a valid $TERM has no entry on this host.
TerminalSetup DetectTerminal();

// The terminal mode of stdin, when the sandbox gets a TTY.
class SavedTerminalMode {
 public:
  // Saves the mode (tcgetattr) when `tty`; otherwise Restore does nothing.
  void Save(bool tty);
  // Puts the saved mode back (TCSADRAIN), if one was saved.
  void Restore() const;

 private:
  bool saved_ = false;
  termios mode_{};
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_TERMINAL_H_
