#include "services/sessiond/session/terminal.h"

#include "absl/strings/str_cat.h"
#include "services/sessiond/session/console.h"

namespace lazaret::cli::session {

TerminalSetup CallerTerminal(bool tty, const HostEnvLookup& caller_env) {
  // Terminal: the same TERM inside, and its compiled entry from the host.
  TerminalSetup t;
  t.tty = tty;
  if (!t.tty) return t;
  const std::string term = caller_env("TERM").value_or("");
  if (!IsValidTermName(term)) return t;
  t.term = term;
  TerminfoSearch search;
  search.terminfo = caller_env("TERMINFO").value_or("");
  search.home = caller_env("HOME").value_or("");
  search.terminfo_dirs = caller_env("TERMINFO_DIRS").value_or("");
  t.terminfo = FindTerminfo(term, search);
  if (!t.terminfo.has_value()) {
    Say(absl::StrCat("no terminfo entry for TERM=", term,
                     " on this host; programs in the sandbox use the image's, if any"));
  }
  return t;
}

}  // namespace lazaret::cli::session
