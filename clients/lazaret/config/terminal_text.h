// Showing agent-written text on the user's terminal, for `lazaret trust`.
// Runs in the user's terminal. The text is untrusted (a workspace
// lazaret.toml the agent may have written), so nothing of it reaches the
// terminal unescaped.
#ifndef LAZARET_CLIENTS_LAZARET_CONFIG_TERMINAL_TEXT_H_
#define LAZARET_CLIENTS_LAZARET_CONFIG_TERMINAL_TEXT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace lazaret::cli::config {

// Text from a file an agent can write, made safe to print on a terminal:
// control characters, DEL and every non-ASCII byte (bidi overrides,
// zero-width characters, C1 controls) are shown as \xNN and a backslash as
// \\, so nothing in it can move the cursor, recolour or hide part of a line.
std::string EscapeForTerminal(absl::string_view text);

// Line `line` (1-based) of `text`, at most 200 bytes of it; empty when there
// is no such line. Not escaped.
std::string SourceLine(absl::string_view text, uint32_t line);

}  // namespace lazaret::cli::config

#endif  // LAZARET_CLIENTS_LAZARET_CONFIG_TERMINAL_TEXT_H_
