// Sandbox text made into what the terminal approver draws. Runs in the
// `lazaret` CLI (lazaret approve, the inline prompt of lazaret run), as the
// user. The input is written by the agent in the sandbox and trusted for
// nothing: no byte of it reaches the terminal unless it is a visible
// character, and everything that was escaped is marked so the user sees
// where the escapes are.
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_DISPLAY_TEXT_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_DISPLAY_TEXT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace lazaret::cli::approve {

// One stretch of a screen row. `text` is UTF-8 that is safe to write to a
// terminal: printable ASCII and visible non-ASCII characters only.
// `marked`: text that stands for something else (an escape such as \x1b or
// \u{202E}); the front-end draws it in reverse video or a colour.
struct Run {
  std::string text;
  bool marked = false;

  bool operator==(const Run&) const = default;
};

// One screen row (or one logical line before wrapping).
using Line = std::vector<Run>;

// Columns a visible code point takes: 0 for combining marks, 2 for East
// Asian wide and emoji, else 1.
size_t CodePointWidth(char32_t cp);

// Columns `text` (UTF-8 as Display makes it) takes.
size_t TextWidth(absl::string_view text);
size_t LineWidth(const Line& line);

// The plain text of a line, marks dropped (for tests and logs).
std::string PlainText(const Line& line);

// `raw` as it may be shown, under the one escaping policy
// (services/vocab/escape.h: controls as \xhh or \n \r \t, invisible and
// bidi code points, C1 controls and a combining mark without a base as
// \u{HHHH}, invalid UTF-8 bytes as \xhh), with a typed backslash kept as it
// is: each escape is one marked run, which tells it from typed text;
// everything else is unchanged, in unmarked runs. The result is one
// logical line.
Line Display(absl::string_view raw);

// Display, with every space a reader could miss made visible: a run of
// two or more spaces, and a space at the start or the end, become one
// marked run "[N spaces]" ("[1 space]"). For what is executed or names a
// place (argv, the command, the binary, cwd): padding cannot push the rest
// of an argument out of sight, and a trailing blank in a directory name
// shows.
Line DisplayVisible(absl::string_view raw);

// An argument longer than this is flagged (Oddities).
inline constexpr size_t kLongArgBytes = 200;

// What a reader could misread in `raw` (an argv element, cwd, the binary),
// in host-written words, each starting with `what`: runs of spaces,
// leading or trailing blanks, tabs and line breaks, a length over
// kLongArgBytes, and non-ASCII characters (named by code point: a Cyrillic
// "а" looks like a Latin "a"). Empty when there is nothing to say.
std::vector<std::string> Oddities(absl::string_view what, absl::string_view raw);

// A run of plain UI text (host-written labels): unmarked. `text` must
// already be safe (it is not escaped).
Line Plain(absl::string_view text);

// `line` cut into rows of at most `width` columns (an escape is not split
// unless it is wider than a row). More than `max_rows` rows: the last row
// kept ends with an ellipsis "…" (U+2026). width 0 or max_rows 0: no rows.
// Work is bounded by what is kept, not by the length of `line`.
std::vector<Line> Wrap(const Line& line, size_t width, size_t max_rows);

// `line` in one row of `width` columns, ending with "…" when it was cut.
Line Truncate(const Line& line, size_t width);

// Appends `suffix` to `line`, merging equal marks.
void Append(Line& line, const Line& suffix);

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_DISPLAY_TEXT_H_
