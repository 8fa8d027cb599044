// What a `lazaret run` session tells the developer while it runs: lines on
// stderr ("lazaret: ..."), and with LAZARET_TRACE=1 how long each phase
// took (docs/operations.md). Runs in the `lazaret` CLI, in the developer's
// terminal; the lines are Lazaret's own text, never secret values.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_CONSOLE_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_CONSOLE_H_

#include <string>

namespace lazaret::cli::session {

// "lazaret: <line>" on stderr.
void Say(const std::string& line);

// With LAZARET_TRACE=1: the milliseconds since the first Trace and `phase`,
// on stderr.
void Trace(const char* phase);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_CONSOLE_H_
