#include "clients/lazaret/approve/display_text.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lazaret::cli::approve {

void PrintTo(const Run& run, std::ostream* os) {
  *os << (run.marked ? "[marked \"" : "[\"") << run.text << "\"]";
}

namespace {

using ::testing::ElementsAre;

bool Safe(const Line& line) {
  for (const approve::Run& run : line) {
    for (unsigned char c : run.text) {
      if (c < 0x20 || c == 0x7F) return false;
    }
    // No C1 control as UTF-8 (C2 80..C2 9F).
    if (run.text.find("\xC2\x80") != std::string::npos) return false;
    for (size_t i = 0; i + 1 < run.text.size(); ++i) {
      if (static_cast<unsigned char>(run.text[i]) == 0xC2 &&
          static_cast<unsigned char>(run.text[i + 1]) >= 0x80 &&
          static_cast<unsigned char>(run.text[i + 1]) <= 0x9F)
        return false;
    }
  }
  return true;
}

TEST(DisplayTextTest, PlainAsciiIsUnchangedAndUnmarked) {
  EXPECT_THAT(Display("git push origin main"),
              ElementsAre(approve::Run{"git push origin main", false}));
  EXPECT_THAT(Display("a\\b"), ElementsAre(approve::Run{"a\\b", false}));
  EXPECT_TRUE(Display("").empty());
}

TEST(DisplayTextTest, ClearScreenSequenceIsEscapedAndMarked) {
  const Line line = Display("ls\x1b[2Jrm");
  EXPECT_THAT(line, ElementsAre(approve::Run{"ls", false}, approve::Run{"\\x1b", true},
                                approve::Run{"[2Jrm", false}));
  EXPECT_TRUE(Safe(line));
}

TEST(DisplayTextTest, ControlsNewlinesAndDelAreEscaped) {
  EXPECT_THAT(
      Display("a\nb\tc\rd\x7f\x01"),
      ElementsAre(approve::Run{"a", false}, approve::Run{"\\n", true}, approve::Run{"b", false},
                  approve::Run{"\\t", true}, approve::Run{"c", false}, approve::Run{"\\r", true},
                  approve::Run{"d", false}, approve::Run{"\\x7f", true},
                  approve::Run{"\\x01", true}));
}

TEST(DisplayTextTest, RightToLeftOverrideIsEscaped) {
  EXPECT_THAT(Display("echo \xE2\x80\xAEtxt.exe"),
              ElementsAre(approve::Run{"echo ", false}, approve::Run{"\\u{202E}", true},
                          approve::Run{"txt.exe", false}));
}

TEST(DisplayTextTest, ZeroWidthSpaceAndBomAreEscaped) {
  EXPECT_THAT(Display("r\xE2\x80\x8Bm"),
              ElementsAre(approve::Run{"r", false}, approve::Run{"\\u{200B}", true},
                          approve::Run{"m", false}));
  EXPECT_THAT(Display("\xEF\xBB\xBFx"),
              ElementsAre(approve::Run{"\\u{FEFF}", true}, approve::Run{"x", false}));
}

TEST(DisplayTextTest, NoBreakSpaceAndC1ControlsAreEscaped) {
  EXPECT_THAT(Display("a\xC2\xA0z"),
              ElementsAre(approve::Run{"a", false}, approve::Run{"\\u{00A0}", true},
                          approve::Run{"z", false}));
  const Line csi = Display(
      "\xC2\x9B"
      "2J");
  EXPECT_THAT(csi, ElementsAre(approve::Run{"\\u{009B}", true}, approve::Run{"2J", false}));
  EXPECT_TRUE(Safe(csi));
}

TEST(DisplayTextTest, VisibleNonAsciiStays) {
  EXPECT_THAT(Display("caf\xC3\xA9 \xD0\xB0"),
              ElementsAre(approve::Run{"caf\xC3\xA9 \xD0\xB0", false}));
}

TEST(DisplayTextTest, CombiningMarkStaysOnABaseAndIsEscapedAlone) {
  EXPECT_THAT(Display("e\xCC\x81"), ElementsAre(approve::Run{"e\xCC\x81", false}));
  EXPECT_EQ(LineWidth(Display("e\xCC\x81")), 1u);
  EXPECT_THAT(Display("\xCC\x81x"),
              ElementsAre(approve::Run{"\\u{0301}", true}, approve::Run{"x", false}));
  // After an escape there is no base to draw on.
  EXPECT_THAT(Display("\x1b\xCC\x81"),
              ElementsAre(approve::Run{"\\x1b", true}, approve::Run{"\\u{0301}", true}));
}

TEST(DisplayTextTest, InvalidUtf8BytesAreEscaped) {
  EXPECT_THAT(Display("a\xFF\xC3"),
              ElementsAre(approve::Run{"a", false}, approve::Run{"\\xff", true},
                          approve::Run{"\\xc3", true}));
  // An overlong ESC.
  EXPECT_THAT(Display("\xC0\x9B"),
              ElementsAre(approve::Run{"\\xc0", true}, approve::Run{"\\x9b", true}));
}

TEST(DisplayTextTest, WidthCountsWideAndCombining) {
  EXPECT_EQ(TextWidth("abc"), 3u);
  EXPECT_EQ(TextWidth("\xE4\xB8\xAD"), 2u);  // 中
  EXPECT_EQ(TextWidth("\xE2\x80\xA6"), 1u);
}

TEST(DisplayTextTest, WrapSplitsAtWidthAndKeepsEscapesWhole) {
  const std::vector<Line> rows = Wrap(Display("abcdef\x1bgh"), 8, 10);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_THAT(rows[0], ElementsAre(approve::Run{"abcdef", false}));
  EXPECT_THAT(rows[1], ElementsAre(approve::Run{"\\x1b", true}, approve::Run{"gh", false}));
}

TEST(DisplayTextTest, WrapNeverWritesWiderThanTheRow) {
  for (size_t width = 1; width < 20; ++width) {
    for (const Line& row :
         Wrap(Display("x\xE4\xB8\xAD\xE4\xB8\xAD y\xE2\x80\xAEz and more"), width, 100)) {
      if (width >= 8) {
        EXPECT_LE(LineWidth(row), width) << width;
      }
    }
  }
}

TEST(DisplayTextTest, WrapTruncatesWithEllipsis) {
  const std::vector<Line> rows = Wrap(Display("0123456789abcdefghij"), 5, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(PlainText(rows[0]), "01234");
  EXPECT_EQ(PlainText(rows[1]), "5678\xE2\x80\xA6");
  EXPECT_EQ(PlainText(Truncate(Display("hello world"), 6)), "hello\xE2\x80\xA6");
  EXPECT_EQ(PlainText(Truncate(Display("hello"), 5)), "hello");
  EXPECT_TRUE(Wrap(Display("x"), 0, 3).empty());
}

TEST(DisplayTextTest, TruncationDropsAWholeEscapeForTheEllipsis) {
  const Line row = Truncate(Display("abc\x1b"
                                    "defg"),
                            7);
  EXPECT_THAT(row, ElementsAre(approve::Run{"abc\xE2\x80\xA6", false}));
}

TEST(DisplayTextTest, TenKilobyteLineIsSafeAndBounded) {
  std::string raw;
  for (int i = 0; i < 1000; ++i) raw += "abc\x1b[31m\xE2\x80\xAE";
  ASSERT_GE(raw.size(), 10000u);
  const Line line = Display(raw);
  EXPECT_TRUE(Safe(line));
  const std::vector<Line> rows = Wrap(line, 80, 3);
  ASSERT_EQ(rows.size(), 3u);
  for (const Line& row : rows) EXPECT_LE(LineWidth(row), 80u);
  EXPECT_TRUE(absl::EndsWith(PlainText(rows[2]), "\xE2\x80\xA6"));
}

TEST(DisplayTextTest, SpacesAReaderCouldMissAreCountedAndMarked) {
  EXPECT_THAT(DisplayVisible("git status"), ElementsAre(approve::Run{"git status", false}));
  EXPECT_THAT(DisplayVisible("tail -n 40" + std::string(150, ' ') + "; touch x"),
              ElementsAre(approve::Run{"tail -n 40", false}, approve::Run{"[150 spaces]", true},
                          approve::Run{"; touch x", false}));
  EXPECT_THAT(DisplayVisible("/home/u/proj "),
              ElementsAre(approve::Run{"/home/u/proj", false}, approve::Run{"[1 space]", true}));
  EXPECT_THAT(DisplayVisible(" "), ElementsAre(approve::Run{"[1 space]", true}));
  EXPECT_THAT(DisplayVisible("  a"),
              ElementsAre(approve::Run{"[2 spaces]", true}, approve::Run{"a", false}));
  // Everything else as Display shows it.
  EXPECT_THAT(DisplayVisible("a\tb\x1b"),
              ElementsAre(approve::Run{"a", false}, approve::Run{"\\t", true},
                          approve::Run{"b", false}, approve::Run{"\\x1b", true}));
  EXPECT_TRUE(DisplayVisible("").empty());
  EXPECT_TRUE(Safe(DisplayVisible("x  \xE2\x80\xAE  y\x07")));
}

TEST(DisplayTextTest, OdditiesAreSaidInWords) {
  EXPECT_TRUE(Oddities("argv[1]", "status").empty());
  EXPECT_TRUE(Oddities("argv[1]", "a b c").empty());
  EXPECT_THAT(Oddities("argv[2]", "a" + std::string(150, ' ') + "b"),
              ElementsAre("argv[2] holds a run of 150 spaces"));
  EXPECT_THAT(Oddities("cwd", "/w/ "), ElementsAre("cwd ends with a space"));
  EXPECT_THAT(Oddities("cwd", " /w"), ElementsAre("cwd starts with a space"));
  EXPECT_THAT(Oddities("argv[1]", "a\tb"), ElementsAre("argv[1] holds a tab or a line break"));
  EXPECT_THAT(Oddities("argv[1]", std::string(kLongArgBytes + 1, 'x')),
              ElementsAre(absl::StrCat("argv[1] is ", kLongArgBytes + 1, " bytes long")));
  EXPECT_TRUE(Oddities("argv[1]", std::string(kLongArgBytes, 'x')).empty());
  // Cyrillic a and e, Greek omicron: each named once.
  const std::vector<std::string> lookalike =
      Oddities("argv[0]", "\xD0\xB0p\xD0\xB0\xD1\x81h\xCE\xBF");
  ASSERT_EQ(lookalike.size(), 1u);
  EXPECT_EQ(lookalike[0],
            "argv[0] holds 4 non-ASCII character(s), which can look like ASCII ones: U+0430 "
            "U+0441 U+03BF");
}

}  // namespace
}  // namespace lazaret::cli::approve
