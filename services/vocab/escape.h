// Untrusted text made safe to show to a human: on a terminal, in a log line
// an approver reads, in a dialog. The one escaping policy of every process
// (the broker's escaped copies, `lazaret trust`, `lazaret config`, `lazaret
// net`, the audit and state listings, the terminal approver). Part of
// lazaret_vocab: runs anywhere; the text is written by the agent or read
// from a file it can write, and trusted for nothing: no byte of it that
// could move the cursor, recolour, retitle, hide or reorder text reaches
// the output as it is.
#ifndef LAZARET_SERVICES_VOCAB_ESCAPE_H_
#define LAZARET_SERVICES_VOCAB_ESCAPE_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

// The policy. Printable ASCII stays. Escaped, each as one escape:
//   - LF, CR and tab as \n \r \t; other C0 controls and DEL as \xhh;
//   - an invalid UTF-8 byte as \xhh;
//   - C1 controls, every invisible code point (IsInvisibleCodePoint: bidi
//     controls, zero-width and format characters, the Unicode spaces),
//     surrogates, noncharacters and private-use code points as \u{HHHH};
//   - a combining mark that does not follow a visible base character (it
//     would draw over the cell before it) as \u{HHHH}.
// Visible non-ASCII characters stay unless `ascii_only`. The two options
// are where the callers really differ:
struct EscapeOptions {
  // Every non-ASCII code point escaped (\u{HHHH}), so the result is plain
  // ASCII: for text a reader compares character by character (a workspace
  // file under `lazaret trust`, configuration and audit listings), where a
  // Cyrillic letter must not pass for a Latin one.
  bool ascii_only = false;
  // A typed backslash doubled (\\), so that text cannot forge an escape.
  // Off only where every escape is drawn marked (the terminal approver's
  // reverse video), which already tells an escape from typed text.
  bool double_backslash = true;
};

// Walks `raw` under the policy and calls `emit(text, escaped)` for each
// piece in order: `escaped` false for a run of characters that stay as
// they are, true for one escape. The concatenation of the pieces is
// EscapeText's result.
void ForEachEscapePiece(absl::string_view raw, const EscapeOptions& options,
                        absl::FunctionRef<void(absl::string_view text, bool escaped)> emit);

// `raw` escaped under the policy as one string. The result never holds an
// ESC, any other C0 byte, DEL or a C1 code point. `*changed` (may be null)
// says whether anything was escaped.
std::string EscapeText(absl::string_view raw, const EscapeOptions& options,
                       bool* changed = nullptr);

// The common forms: visible non-ASCII kept (the broker's escaped copies of
// a request, its refusal messages), and plain ASCII (listings on the
// user's terminal).
inline std::string EscapeForDisplay(absl::string_view raw, bool* changed = nullptr) {
  return EscapeText(raw, EscapeOptions{}, changed);
}
inline std::string EscapeForTerminal(absl::string_view raw) {
  return EscapeText(raw, EscapeOptions{.ascii_only = true});
}
// Sandbox text for a message or a log line: at most `max` bytes of it,
// escaped for a terminal, "..." marking a cut.
inline std::string EscapeForTerminalCut(absl::string_view raw, size_t max) {
  std::string out = EscapeForTerminal(raw.substr(0, max));
  if (raw.size() > max) out += "...";
  return out;
}
// The agent's text in a message: in double quotes, escaped for a terminal.
inline std::string QuotedForTerminal(absl::string_view raw) {
  return "\"" + EscapeForTerminal(raw) + "\"";
}

// True for the combining marks (drawn over the cell before them).
bool IsCombiningCodePoint(char32_t cp);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_ESCAPE_H_
