#include "services/vocab/escape.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "services/vocab/text_scan.h"

namespace lazaret::vocab {
namespace {

TEST(EscapeForDisplayTest, PrintableAsciiStays) {
  bool changed = true;
  EXPECT_EQ(EscapeForDisplay("gh pr view 1", &changed), "gh pr view 1");
  EXPECT_FALSE(changed);
}

TEST(EscapeForDisplayTest, ControlsBecomeEscapes) {
  bool changed = false;
  EXPECT_EQ(EscapeForDisplay("a\x1b[2Jb\\c\n\r\t\x7f", &changed), "a\\x1b[2Jb\\\\c\\n\\r\\t\\x7f");
  EXPECT_TRUE(changed);
}

TEST(EscapeForDisplayTest, InvisibleCodePointsBecomeUnicodeEscapes) {
  EXPECT_EQ(EscapeForDisplay("ab\u202Ecd\u200B\u00A0", nullptr), "ab\\u{202E}cd\\u{200B}\\u{00A0}");
  EXPECT_EQ(EscapeForDisplay("\xc2\x9b"
                             "31m",
                             nullptr),
            "\\u{009B}31m");  // C1 CSI
  EXPECT_EQ(EscapeForDisplay("\U000E0041", nullptr), "\\u{E0041}");
}

TEST(EscapeForDisplayTest, VisibleLettersStayAndInvalidBytesAreHex) {
  bool changed = true;
  EXPECT_EQ(EscapeForDisplay("caf\u00e9 \u0435", &changed), "caf\u00e9 \u0435");
  EXPECT_FALSE(changed);
  EXPECT_EQ(EscapeForDisplay("a\xff\xc0", nullptr), "a\\xff\\xc0");
}

TEST(EscapeForDisplayTest, NeverEmitsControlBytesForAnyByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  all += "\u0085\u009b\u202e";
  const std::string shown = EscapeForDisplay(all, nullptr);
  for (unsigned char c : shown) {
    EXPECT_TRUE(c >= 0x20 && c != 0x7F) << static_cast<int>(c);
  }
  EXPECT_FALSE(ScanText(shown).control);
  EXPECT_FALSE(ScanText(shown).invisible);
}

TEST(EscapeForTerminalTest, PrintableAsciiIsShownAsIs) {
  EXPECT_EQ(EscapeForTerminal("allow_egress = [\"0.0.0.0/0\"] # ok"),
            "allow_egress = [\"0.0.0.0/0\"] # ok");
}

TEST(EscapeForTerminalTest, NothingCanMoveTheCursorRecolourOrHideText) {
  // ESC sequences, CR, BS, DEL, a C1 control, a bidi override (U+202E), a
  // zero-width space (U+200B) and NUL.
  EXPECT_EQ(EscapeForTerminal("\x1b[2Ja\rb\bc\x7f"), "\\x1b[2Ja\\rb\\x08c\\x7f");
  EXPECT_EQ(EscapeForTerminal("\xc2\x9b"), "\\u{009B}");
  EXPECT_EQ(EscapeForTerminal("x\xe2\x80\xaey"), "x\\u{202E}y");
  EXPECT_EQ(EscapeForTerminal("\xe2\x80\x8b"), "\\u{200B}");
  EXPECT_EQ(EscapeForTerminal(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeForTerminal("tab\tnl\n"), "tab\\tnl\\n");
}

TEST(EscapeForTerminalTest, EveryNonAsciiCharacterIsEscapedSoLookalikesShow) {
  // A Cyrillic "е" (U+0435) next to a Latin "e"; an invalid byte.
  EXPECT_EQ(EscapeForTerminal("caf\u00e9 \u0435\xff"), "caf\\u{00E9} \\u{0435}\\xff");
}

TEST(EscapeForTerminalTest, ABackslashIsDoubledSoEscapesCannotBeForged) {
  EXPECT_EQ(EscapeForTerminal("\\x1b"), "\\\\x1b");
}

TEST(EscapeTextTest, CombiningMarkWithoutABaseIsEscaped) {
  EXPECT_EQ(EscapeForDisplay("e\u0301"), "e\u0301");
  EXPECT_EQ(EscapeForDisplay("\u0301x"), "\\u{0301}x");
  EXPECT_EQ(EscapeForDisplay("\n\u0301"), "\\n\\u{0301}");
}

TEST(EscapeTextTest, PrivateUseAndNoncharactersAreEscaped) {
  EXPECT_EQ(EscapeForDisplay("\uE000\uFFFF"), "\\u{E000}\\u{FFFF}");
}

TEST(EscapeTextTest, PiecesMarkEachEscapeAndKeepBackslashesWhenAsked) {
  std::vector<std::pair<std::string, bool>> pieces;
  ForEachEscapePiece("a\\b\x1b\u202Ec", EscapeOptions{.double_backslash = false},
                     [&](absl::string_view text, bool escaped) {
                       pieces.emplace_back(std::string(text), escaped);
                     });
  const std::vector<std::pair<std::string, bool>> want = {
      {"a\\b", false}, {"\\x1b", true}, {"\\u{202E}", true}, {"c", false}};
  EXPECT_EQ(pieces, want);
}

}  // namespace
}  // namespace lazaret::vocab
