// Looking at request text before it is judged or shown (escape.h shows
// it). Part of lazaret_vocab: runs anywhere (lazaret-brokerd judges
// requests with it, the CLI's approver and the escaping policy use its
// notion of invisible). The text is written by the agent in the sandbox and
// trusted for nothing: every code point that could hide, reorder or change
// what a human or the shell sees is found and named.
#ifndef LAZARET_SERVICES_VOCAB_TEXT_SCAN_H_
#define LAZARET_SERVICES_VOCAB_TEXT_SCAN_H_

#include <string>

#include "absl/strings/string_view.h"

namespace lazaret::vocab {

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

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_TEXT_SCAN_H_
