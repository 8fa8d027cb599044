#include "services/vocab/text_scan.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/vocab/utf8.h"

namespace lazaret::vocab {
namespace {

constexpr absl::string_view kShellMeta = ";|&$`<>(){}[]*?~!#'\"";

struct NamedCodePoint {
  char32_t cp;
  const char* name;
};

// Names for the invisible code points a reader is most likely to meet;
// the others are described by class.
constexpr NamedCodePoint kNames[] = {
    {0x00A0, "NO-BREAK SPACE"},
    {0x00AD, "SOFT HYPHEN"},
    {0x034F, "COMBINING GRAPHEME JOINER"},
    {0x061C, "ARABIC LETTER MARK"},
    {0x115F, "HANGUL CHOSEONG FILLER"},
    {0x1160, "HANGUL JUNGSEONG FILLER"},
    {0x180E, "MONGOLIAN VOWEL SEPARATOR"},
    {0x200B, "ZERO WIDTH SPACE"},
    {0x200C, "ZERO WIDTH NON-JOINER"},
    {0x200D, "ZERO WIDTH JOINER"},
    {0x200E, "LEFT-TO-RIGHT MARK"},
    {0x200F, "RIGHT-TO-LEFT MARK"},
    {0x2028, "LINE SEPARATOR"},
    {0x2029, "PARAGRAPH SEPARATOR"},
    {0x202A, "LEFT-TO-RIGHT EMBEDDING"},
    {0x202B, "RIGHT-TO-LEFT EMBEDDING"},
    {0x202C, "POP DIRECTIONAL FORMATTING"},
    {0x202D, "LEFT-TO-RIGHT OVERRIDE"},
    {0x202E, "RIGHT-TO-LEFT OVERRIDE"},
    {0x202F, "NARROW NO-BREAK SPACE"},
    {0x205F, "MEDIUM MATHEMATICAL SPACE"},
    {0x2060, "WORD JOINER"},
    {0x2066, "LEFT-TO-RIGHT ISOLATE"},
    {0x2067, "RIGHT-TO-LEFT ISOLATE"},
    {0x2068, "FIRST STRONG ISOLATE"},
    {0x2069, "POP DIRECTIONAL ISOLATE"},
    {0x3000, "IDEOGRAPHIC SPACE"},
    {0x3164, "HANGUL FILLER"},
    {0xFEFF, "ZERO WIDTH NO-BREAK SPACE"},
    {0xFFA0, "HALFWIDTH HANGUL FILLER"},
};

std::string Describe(char32_t cp) {
  for (const NamedCodePoint& n : kNames) {
    if (n.cp == cp) return absl::StrFormat("U+%04X %s", static_cast<uint32_t>(cp), n.name);
  }
  const char* what = "an invisible or format character";
  if (cp >= 0x80 && cp <= 0x9F) {
    what = "a C1 control character";
  } else if ((cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xE0100 && cp <= 0xE01EF) ||
             (cp >= 0x180B && cp <= 0x180F)) {
    what = "a variation selector";
  } else if (cp >= 0xE0000 && cp <= 0xE007F) {
    what = "a tag character";
  } else if (cp >= 0x2000 && cp <= 0x200A) {
    what = "a space other than U+0020";
  } else if (!IsInvisibleCodePoint(cp)) {
    what = "a non-ASCII character";
  }
  return absl::StrFormat("U+%04X (%s)", static_cast<uint32_t>(cp), what);
}

std::string DescribeAscii(char c) {
  switch (c) {
    case '\0':
      return "a NUL byte";
    case '\t':
      return "a tab";
    case '\n':
      return "a newline";
    case '\r':
      return "a carriage return";
    case '\\':
      return "a backslash";
    case 0x7F:
      return "DEL (0x7F)";
    default:
      break;
  }
  if (static_cast<uint8_t>(c) < 0x20) {
    return absl::StrFormat("control character 0x%02X", static_cast<unsigned>(c));
  }
  return absl::StrCat("'", absl::string_view(&c, 1), "'");
}

}  // namespace

bool IsInvisibleCodePoint(char32_t cp) {
  if (cp >= 0x80 && cp <= 0xA0) return true;  // C1 controls and NO-BREAK SPACE
  switch (cp) {
    case 0x00AD:
    case 0x034F:
    case 0x061C:
    case 0x06DD:
    case 0x070F:
    case 0x08E2:
    case 0x115F:
    case 0x1160:
    case 0x1680:
    case 0x17B4:
    case 0x17B5:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x2800:
    case 0x3000:
    case 0x3164:
    case 0xFEFF:
    case 0xFFA0:
    case 0x110BD:
    case 0x110CD:
      return true;
    default:
      break;
  }
  return (cp >= 0x0600 && cp <= 0x0605) ||    // Arabic number signs (Cf)
         (cp >= 0x180B && cp <= 0x180F) ||    // Mongolian selectors, vowel separator
         (cp >= 0x2000 && cp <= 0x200F) ||    // spaces, zero-width, LRM/RLM
         (cp >= 0x202A && cp <= 0x202E) ||    // bidi embeddings and overrides
         (cp >= 0x2060 && cp <= 0x206F) ||    // word joiner, invisible operators, isolates
         (cp >= 0xFE00 && cp <= 0xFE0F) ||    // variation selectors
         (cp >= 0xFFF0 && cp <= 0xFFFB) ||    // interlinear annotation, unassigned specials
         (cp >= 0x13430 && cp <= 0x1343F) ||  // Egyptian hieroglyph format controls
         (cp >= 0x1BCA0 && cp <= 0x1BCA3) ||  // shorthand format controls
         (cp >= 0x1D173 && cp <= 0x1D17A) ||  // musical symbol format controls
         (cp >= 0xE0000 && cp <= 0xE007F) ||  // tag characters
         (cp >= 0xE0100 && cp <= 0xE01EF);    // variation selectors supplement
}

TextFindings ScanText(absl::string_view utf8) {
  TextFindings f;
  auto note = [&f](std::string what) {
    if (f.first.empty()) f.first = std::move(what);
  };
  size_t next = 0;
  while (next < utf8.size()) {
    const size_t i = next;
    const char32_t cp = DecodeNext(utf8, &next);
    if (IsInvalidByte(cp)) {
      f.non_ascii = true;
      note(absl::StrFormat("contains an invalid UTF-8 byte 0x%02X at byte %d",
                           static_cast<unsigned>(cp - kInvalidByteBase), i));
    } else if (cp >= 0x80) {
      f.non_ascii = true;
      if (cp <= 0x9F) f.control = true;
      if (IsInvisibleCodePoint(cp)) f.invisible = true;
      note(absl::StrCat("contains ", Describe(cp), " at byte ", i));
    } else {
      const char c = static_cast<char>(cp);
      if (c == '\0') {
        f.nul = true;
      } else if (c == '\n' || c == '\r') {
        f.newline = true;
      } else if (c == '\\') {
        f.backslash = true;
      } else if (static_cast<uint8_t>(c) < 0x20 || c == 0x7F) {
        f.control = true;
      } else if (kShellMeta.find(c) != absl::string_view::npos) {
        f.shell_meta = true;
      } else {
        continue;
      }
      if (c == '\\' || kShellMeta.find(c) != absl::string_view::npos) {
        note(absl::StrCat("contains ", DescribeAscii(c)));
      } else {
        note(absl::StrCat("contains ", DescribeAscii(c), " at byte ", i));
      }
    }
  }
  return f;
}

}  // namespace lazaret::vocab
