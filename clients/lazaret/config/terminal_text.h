// The source line a diagnostic points at, for `lazaret trust`. Runs in the
// user's terminal. The text is untrusted (a workspace lazaret.toml the agent
// may have written): the caller escapes the line before showing it
// (services/vocab/escape.h EscapeForTerminal).
#ifndef LAZARET_CLIENTS_LAZARET_CONFIG_TERMINAL_TEXT_H_
#define LAZARET_CLIENTS_LAZARET_CONFIG_TERMINAL_TEXT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace lazaret::cli::config {

// Line `line` (1-based) of `text`, at most 200 bytes of it; empty when there
// is no such line. Not escaped.
std::string SourceLine(absl::string_view text, uint32_t line);

}  // namespace lazaret::cli::config

#endif  // LAZARET_CLIENTS_LAZARET_CONFIG_TERMINAL_TEXT_H_
