#include "services/sessiond/session/terminal.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "services/sessiond/session/console.h"
#include "services/sessiond/session/env.h"

namespace lazaret::cli::session {

TerminalSetup DetectTerminal() {
  // Terminal: the same TERM inside, and its compiled entry from the host.
  TerminalSetup t;
  t.tty = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1;
  if (!t.tty) return t;
  const std::string term = HostEnv("TERM").value_or("");
  if (!IsValidTermName(term)) return t;
  t.term = term;
  t.terminfo = FindTerminfo(term, TerminfoSearchFromEnvironment());
  if (!t.terminfo.has_value()) {
    Say(absl::StrCat("no terminfo entry for TERM=", term,
                     " on this host; programs in the sandbox use the image's, if any"));
  }
  return t;
}

void SavedTerminalMode::Save(bool tty) { saved_ = tty && tcgetattr(STDIN_FILENO, &mode_) == 0; }

void SavedTerminalMode::Restore() const {
  if (saved_) tcsetattr(STDIN_FILENO, TCSADRAIN, &mode_);
}

}  // namespace lazaret::cli::session
