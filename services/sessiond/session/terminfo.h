// Finding the host terminal's compiled terminfo entry, so that a sandbox
// image that lacks it (xterm-kitty, xterm-ghostty, alacritty, ...) still
// drives the user's terminal correctly. Runs in the session worker
// (lazaret-sessiond --session-worker) on the host. $TERM and the search
// variables come from the caller's environment (StartRequest.env); the
// name is checked before it becomes part of any path.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_TERMINFO_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_TERMINFO_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli::session {

// The directory the entry is bound under inside the sandbox; TERMINFO
// points there.
inline constexpr char kSandboxTerminfoDir[] = "/run/lazaret/terminfo";

// Where to look, taken from the environment of `lazaret run`
// (terminal.h CallerTerminal).
struct TerminfoSearch {
  std::string terminfo;       // $TERMINFO
  std::string home;           // $HOME
  std::string terminfo_dirs;  // $TERMINFO_DIRS (':'-separated; empty element = system dirs)
  // The system directories ncurses uses after the variables.
  std::vector<std::string> system_dirs = {"/etc/terminfo", "/lib/terminfo", "/usr/share/terminfo"};
};

TerminfoSearch TerminfoSearchFromEnvironment();

struct TerminfoEntry {
  std::string term;
  std::string host_path;       // canonical path of the compiled entry on the host
  std::string container_path;  // /run/lazaret/terminfo/<first letter>/<term>
};

// True when `term` can be a terminfo file name: [A-Za-z0-9._+-], at most 64
// characters, not starting with '.'.
bool IsValidTermName(const std::string& term);

// The directories searched, in ncurses' order: $TERMINFO, ~/.terminfo, each
// $TERMINFO_DIRS element, then the system directories.
std::vector<std::string> TerminfoDirectories(const TerminfoSearch& search);

// Looks for `term` in each directory under both layouts ncurses writes:
// "<first letter>/<term>" and "<hex of first letter>/<term>". nullopt when
// there is no entry or the name is not acceptable.
std::optional<TerminfoEntry> FindTerminfo(const std::string& term, const TerminfoSearch& search);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_TERMINFO_H_
