// What a session tells the developer while it starts, runs and ends: lines
// ("lazaret: ..."), and with LAZARET_TRACE=1 how long each phase took
// (docs/operations.md). Runs in the session worker (lazaret-sessiond
// --session-worker, as the user): every line goes to the worker's stderr
// (its log) and to the notice sink, which relays it to the developer - as
// a Start event until the session runs, then to the attached terminals.
// The lines are Lazaret's own text, never secret values.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_CONSOLE_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_CONSOLE_H_

#include <functional>
#include <string>

namespace lazaret::cli::session {

// Receives each line, "lazaret: " included, without a newline. Called
// from whichever thread says it, one call at a time.
using NoticeSink = std::function<void(const std::string& line)>;

// Replaces the sink (none: stderr only).
void SetNoticeSink(NoticeSink sink);

// Whether Trace lines are produced (the caller's LAZARET_TRACE); without a
// call, this process's own LAZARET_TRACE decides.
void SetTraceEnabled(bool on);

// "lazaret: <line>".
void Say(const std::string& line);

// With tracing on: the milliseconds since the first Trace and `phase`.
void Trace(const char* phase);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_CONSOLE_H_
