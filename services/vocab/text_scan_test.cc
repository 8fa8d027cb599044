#include "services/vocab/text_scan.h"

#include <gtest/gtest.h>

namespace lazaret::vocab {
namespace {

TEST(ScanTextTest, PlainCommandHasNoFinding) {
  const TextFindings f = ScanText("gh pr view 12 --json=title,body -R a/b:c@d%e+f^g");
  EXPECT_FALSE(f.any());
  EXPECT_EQ(f.first, "");
}

TEST(ScanTextTest, EachShellMetacharacterIsFound) {
  for (char c : std::string(";|&$`<>(){}[]*?~!#'\"")) {
    const TextFindings f = ScanText(std::string("gh ") + c);
    EXPECT_TRUE(f.shell_meta) << c;
    EXPECT_EQ(f.first, std::string("contains '") + c + "'");
  }
}

TEST(ScanTextTest, ControlsNewlinesBackslashAndNul) {
  EXPECT_TRUE(ScanText("a\tb").control);
  EXPECT_EQ(ScanText("a\tb").first, "contains a tab at byte 1");
  EXPECT_TRUE(ScanText("a\x1b[31m").control);
  EXPECT_TRUE(ScanText("a\x7f").control);
  EXPECT_TRUE(ScanText("a\nb").newline);
  EXPECT_TRUE(ScanText("a\rb").newline);
  EXPECT_TRUE(ScanText("a\\b").backslash);
  EXPECT_EQ(ScanText("a\\b").first, "contains a backslash");
  EXPECT_TRUE(ScanText(std::string("a\0b", 3)).nul);
}

TEST(ScanTextTest, BidiOverrideIsNamedWithItsOffset) {
  const TextFindings f = ScanText("gh pr view 12\u202E");
  EXPECT_TRUE(f.invisible);
  EXPECT_TRUE(f.non_ascii);
  EXPECT_EQ(f.first, "contains U+202E RIGHT-TO-LEFT OVERRIDE at byte 13");
}

TEST(ScanTextTest, InvisibleCodePointsAreInvisible) {
  for (const char* s :
       {"\u200B", "\uFEFF", "\u00A0", "\u00AD", "\u2066", "\u061C", "\u200E", "\u2060",
        "\U000E0041", "\uFE0F", "\u2028", "\u180E", "\u3164", "\uFFA0", "\u115F", "\u0085"}) {
    EXPECT_TRUE(ScanText(s).invisible) << s;
  }
  EXPECT_TRUE(ScanText("\u0085").control);
}

TEST(ScanTextTest, VisibleNonAsciiIsNonAsciiButNotInvisible) {
  const TextFindings cyrillic = ScanText("gh pr vi\u0435w");
  EXPECT_TRUE(cyrillic.non_ascii);
  EXPECT_FALSE(cyrillic.invisible);
  EXPECT_EQ(cyrillic.first, "contains U+0435 (a non-ASCII character) at byte 8");
  EXPECT_TRUE(ScanText("\uFF47\uFF48").non_ascii);  // fullwidth "gh"
}

TEST(ScanTextTest, InvalidUtf8IsReportedNotSkipped) {
  EXPECT_TRUE(ScanText("a\xff").non_ascii);
  EXPECT_TRUE(ScanText("\xc0\xaf").non_ascii);      // overlong '/'
  EXPECT_TRUE(ScanText("\xed\xa0\x80").non_ascii);  // surrogate
  EXPECT_EQ(ScanText("a\xff").first, "contains an invalid UTF-8 byte 0xFF at byte 1");
}

}  // namespace
}  // namespace lazaret::vocab
