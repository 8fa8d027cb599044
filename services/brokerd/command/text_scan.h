// Looking at request text before it is judged or shown. Runs in
// lazaret-brokerd (no capabilities, the user's or root's uid). The text is
// written by the agent in the sandbox and trusted for nothing: every code
// point that could hide, reorder or change what a human or the shell sees is
// found and named.
#ifndef LAZARET_SERVICES_BROKERD_COMMAND_TEXT_SCAN_H_
#define LAZARET_SERVICES_BROKERD_COMMAND_TEXT_SCAN_H_

#include <string>

#include "absl/strings/string_view.h"

namespace lazaret::brokerd::command {

// What ScanText found. Each flag names one class; a character can set more
// than one (a C1 control is control, non_ascii and invisible).
struct TextFindings {
  // ; | & $ ` < > ( ) { } [ ] * ? ~ ! # ' " (backslash, whitespace controls
  // and the rest have flags of their own).
  bool shell_meta = false;
  // C0 controls other than NUL, LF and CR (tab included), DEL, C1 controls.
  bool control = false;
  bool backslash = false;
  // LF or CR.
  bool newline = false;
  // Any byte >= 0x80 (so every non-ASCII code point, and invalid UTF-8).
  bool non_ascii = false;
  // A code point a reader cannot see or that reorders text: bidi controls,
  // zero-width characters, other format (Cf) characters, variation
  // selectors, soft hyphen, tag characters, C1 controls, line/paragraph
  // separators, Hangul fillers, and the Unicode spaces other than U+0020
  // (they look like a space and are not one). See IsInvisibleCodePoint.
  bool invisible = false;
  bool nul = false;
  // The first finding, in plain ASCII ("contains ';'", "contains U+202E
  // RIGHT-TO-LEFT OVERRIDE at byte 12"); empty when nothing was found.
  std::string first;

  bool any() const {
    return shell_meta || control || backslash || newline || non_ascii || invisible || nul;
  }
};

// Scans `utf8` (validated UTF-8 expected; an invalid byte is reported as
// non-ASCII, never skipped).
TextFindings ScanText(absl::string_view utf8);

// True for the code points TextFindings::invisible describes.
bool IsInvisibleCodePoint(char32_t cp);

// `utf8` made safe to show to a human on a terminal or in a dialog:
// printable ASCII stays (a backslash becomes \\), \n \r \t are written as
// such, other ASCII controls and DEL become \xHH, every invisible code
// point (IsInvisibleCodePoint, C1 controls included) becomes \u{HHHH}, an
// invalid UTF-8 byte becomes \xHH; visible non-ASCII characters stay as
// they are (a Cyrillic letter stays Cyrillic - ScanText is what refuses it
// for auto-approval). The result never contains an ESC, any other C0 byte
// or a C1 code point. `*changed` (may be null) says whether anything was
// escaped.
std::string EscapeForDisplay(absl::string_view utf8, bool* changed);

}  // namespace lazaret::brokerd::command

#endif  // LAZARET_SERVICES_BROKERD_COMMAND_TEXT_SCAN_H_
