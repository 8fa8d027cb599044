#include "services/vocab/escape.h"

#include "absl/strings/str_format.h"
#include "services/vocab/text_scan.h"
#include "services/vocab/utf8.h"

namespace lazaret::vocab {
namespace {

// What must not reach a reader as it is (before the combining-mark and
// ascii_only rules).
bool NeedsEscape(char32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return true;
  if (cp < 0x80) return false;
  if (IsInvalidByte(cp)) return true;
  if (cp >= 0xD800 && cp <= 0xDFFF) return true;
  if ((cp & 0xFFFE) == 0xFFFE) return true;       // noncharacters
  if (cp >= 0xE000 && cp <= 0xF8FF) return true;  // private use
  if (cp >= 0xF0000) return true;                 // private use planes
  return IsInvisibleCodePoint(cp);
}

std::string EscapeOf(char32_t cp) {
  switch (cp) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\\':
      return "\\\\";
    default:
      break;
  }
  if (cp < 0x80) return absl::StrFormat("\\x%02x", static_cast<unsigned>(cp));
  if (IsInvalidByte(cp)) {
    return absl::StrFormat("\\x%02x", static_cast<unsigned>(cp - kInvalidByteBase));
  }
  return absl::StrFormat("\\u{%04X}", static_cast<unsigned>(cp));
}

}  // namespace

bool IsCombiningCodePoint(char32_t cp) {
  return (cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x0483 && cp <= 0x0489) ||
         (cp >= 0x0591 && cp <= 0x05BD) || (cp >= 0x0610 && cp <= 0x061A) ||
         (cp >= 0x064B && cp <= 0x065F) || (cp >= 0x1AB0 && cp <= 0x1AFF) ||
         (cp >= 0x1DC0 && cp <= 0x1DFF) || (cp >= 0x20D0 && cp <= 0x20FF) ||
         (cp >= 0xFE20 && cp <= 0xFE2F);
}

void ForEachEscapePiece(absl::string_view raw, const EscapeOptions& options,
                        absl::FunctionRef<void(absl::string_view text, bool escaped)> emit) {
  size_t plain_start = 0;
  bool after_base = false;  // the previous character is visible and stays
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t at = pos;
    const char32_t cp = DecodeNext(raw, &pos);
    const bool escape = NeedsEscape(cp) || (cp == '\\' && options.double_backslash) ||
                        (options.ascii_only && cp >= 0x80) ||
                        (IsCombiningCodePoint(cp) && !after_base);
    if (!escape) {
      after_base = true;
      continue;
    }
    if (at > plain_start) emit(raw.substr(plain_start, at - plain_start), false);
    emit(EscapeOf(cp), true);
    plain_start = pos;
    after_base = false;
  }
  if (raw.size() > plain_start) emit(raw.substr(plain_start), false);
}

std::string EscapeText(absl::string_view raw, const EscapeOptions& options, bool* changed) {
  std::string out;
  out.reserve(raw.size());
  bool escaped = false;
  ForEachEscapePiece(raw, options, [&](absl::string_view text, bool is_escape) {
    out.append(text.data(), text.size());
    escaped = escaped || is_escape;
  });
  if (changed != nullptr) *changed = escaped;
  return out;
}

}  // namespace lazaret::vocab
