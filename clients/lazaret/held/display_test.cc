#include "clients/lazaret/held/display.h"

#include <gtest/gtest.h>

#include <string>

#include "google/protobuf/util/json_util.h"
#include "lazaret/held/v1/held.pb.h"

namespace lazaret::cli::held {
namespace {

// Nothing a terminal acts on: no C0 control but '\n' (and ESC only in the
// styled output's own reverse-video and colour sequences), no DEL, no C1
// control, and valid UTF-8 with no bidi or zero-width code point.
void ExpectInert(const std::string& text, bool styled) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') continue;
    if (c == 0x1b) {
      ASSERT_TRUE(styled) << "ESC in unstyled output: " << text;
      const std::string rest = text.substr(i);
      const bool ours = rest.rfind("\x1b[7m", 0) == 0 || rest.rfind("\x1b[27m", 0) == 0 ||
                        rest.rfind("\x1b[31m", 0) == 0 || rest.rfind("\x1b[32m", 0) == 0 ||
                        rest.rfind("\x1b[0m", 0) == 0;
      EXPECT_TRUE(ours) << "foreign escape sequence in: " << text;
      continue;
    }
    EXPECT_FALSE(c < 0x20 || c == 0x7f) << "control byte " << int(c) << " in: " << text;
  }
  for (const char* bad :
       {"\xe2\x80\xae", "\xe2\x80\x8b", "\xe2\x81\xa6", "\xc2\x9b", "\xef\xbb\xbf"}) {
    EXPECT_EQ(text.find(bad), std::string::npos) << "invisible code point in: " << text;
  }
}

TEST(HeldDisplayTest, EveryEscapeClassIsShownNeverActedOn) {
  const std::string attacks[] = {
      std::string("+echo \x1b[2J\x1b[H cleared"),     // ESC sequences
      std::string("+\x1b]0;title\x07"),               // OSC, BEL
      std::string("+safe\rEVIL"),                     // CR overwrites the line
      std::string("-a\0b", 4),                        // NUL
      std::string("+\xff\xfe invalid"),               // invalid UTF-8
      std::string("+x = 1 \xe2\x80\xae// reversed"),  // bidi override U+202E
      std::string("+zero\xe2\x80\x8bwidth"),          // U+200B
      std::string("+c1 \xc2\x9b"
                  "31m"),           // C1 CSI
      std::string("+del\x7f"),      // DEL
      std::string("+back\bspace"),  // backspace
  };
  for (bool styled : {false, true}) {
    for (const std::string& line : attacks) {
      const std::string shown = ShowDiffLine(line, styled);
      ExpectInert(shown, styled);
    }
  }
  EXPECT_EQ(ShowDiffLine(std::string("+echo \x1b[2J"), false), "+echo \\x1b[2J");
  EXPECT_EQ(ShowDiffLine("+safe\rEVIL", false), "+safe\\rEVIL");
  EXPECT_EQ(ShowDiffLine(std::string("-a\0b", 4), false), "-a\\x00b");
  EXPECT_EQ(ShowDiffLine("+\xff", false), "+\\xff");
  EXPECT_EQ(ShowDiffLine("+x\xe2\x80\xae", false), "+x\\u{202E}");
  EXPECT_EQ(ShowDiffLine("+a\tb", false), "+a\\tb");
}

TEST(HeldDisplayTest, SpacesAtTheEndOfALineAreShown) {
  EXPECT_EQ(ShowDiffLine("+export A=1 ", false), "+export A=1[1 space]");
  EXPECT_EQ(ShowDiffLine("+x   ", false), "+x[3 spaces]");
  EXPECT_EQ(ShowDiffLine("+  ", false), "+[2 spaces]");
  // Indentation stays as it is.
  EXPECT_EQ(ShowDiffLine("     indented", false), "     indented");
  EXPECT_EQ(ShowDiffLine("+x ", true), "\x1b[32m+x\x1b[7m[1 space]\x1b[27m\x1b[0m");
}

TEST(HeldDisplayTest, UnstyledBackslashesAreDoubledSoEscapesAreUnambiguous) {
  // The literal text "\x1b" in a file differs from an ESC byte.
  EXPECT_EQ(ShowDiffLine("+\\x1b", false), "+\\\\x1b");
  EXPECT_EQ(ShowDiffLine("+\x1b", false), "+\\x1b");
  // Styled, the escape is marked (reverse video) and the literal is not.
  EXPECT_EQ(ShowDiffLine("+\x1b", true), "\x1b[32m+\x1b[7m\\x1b\x1b[27m\x1b[0m");
  EXPECT_EQ(ShowDiffLine(" \\x1b", true), " \\x1b");
  EXPECT_EQ(ShowDiffLine("\\ No newline at end of file", false), "\\ No newline at end of file");
}

TEST(HeldDisplayTest, DiffHeaderIsOursWithTheNameEscaped) {
  const std::string diff = "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n";
  const std::string rel = "sub\n+++ b/forged\x1b[31m/.envrc";
  const std::string shown = ShowDiff(diff, rel, false);
  ExpectInert(shown, false);
  EXPECT_EQ(shown,
            "--- a/sub\\n+++ b/forged\\x1b[31m/.envrc\n"
            "+++ b/sub\\n+++ b/forged\\x1b[31m/.envrc\n"
            "@@ -1 +1 @@\n-old\n+new\n");
  const std::string styled = ShowDiff(diff, rel, true);
  ExpectInert(styled, true);
}

TEST(HeldDisplayTest, NamesShowEverySpace) {
  EXPECT_EQ(ShowName(".envrc ", false), ".envrc[1 space]");
  EXPECT_EQ(ShowName(" .envrc", false), "[1 space].envrc");
  EXPECT_EQ(ShowName("a  b", false), "a[2 spaces]b");
  EXPECT_EQ(ShowName("a\\b", false), "a\\\\b");
}

TEST(HeldDisplayTest, SymlinkSide) {
  EXPECT_EQ(SymlinkText("/home/dev/.ssh"), "symlink -> /home/dev/.ssh\n");
  EXPECT_EQ(ShowDiffLine("+symlink -> /x\x1b[8m", false), "+symlink -> /x\\x1b[8m");
}

TEST(HeldDisplayTest, ListNamesProfileWorkspaceAndEachEntry) {
  EXPECT_NE(ListText("dev", "/w", {}, false).find("nothing held"), std::string::npos);
  std::vector<HeldEntry> entries = {
      {".claude/settings.json", Change::kChanged, "file", "0123456789ab", 1764877800},
      {"sub/.envrc\x1b[2K", Change::kCreated, "symlink", "0123456789ab", 1764877800},
      {".nvmrc", Change::kDeleted, "deleted", "0123456789ab", 1764877800},
  };
  const std::string text = ListText("dev", "/home/dev/p", entries, false);
  ExpectInert(text, false);
  EXPECT_NE(text.find("profile dev in /home/dev/p"), std::string::npos) << text;
  EXPECT_NE(text.find("changed  file     0123456789ab 2025-12-04 19:50 UTC "
                      ".claude/settings.json"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sub/.envrc\\x1b[2K"), std::string::npos) << text;
  EXPECT_NE(text.find("deleted  deleted"), std::string::npos) << text;
  ExpectInert(ListText("dev", "/home/dev/p", entries, true), true);
}

TEST(HeldDisplayTest, ListJsonHasEscapedAndExactPaths) {
  std::vector<HeldEntry> entries = {
      {"sub/\xff.envrc", Change::kCreated, "file", "0123456789ab", 5},
  };
  absl::StatusOr<std::string> json = ListJson("dev", "/w", entries);
  ASSERT_TRUE(json.ok()) << json.status();
  ExpectInert(*json, false);
  ::lazaret::held::v1::Listing back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &back).ok()) << *json;
  ASSERT_EQ(back.entries_size(), 1);
  EXPECT_EQ(back.entries(0).path(), "sub/\\xff.envrc");
  EXPECT_EQ(back.entries(0).path_bytes(), "sub/\xff.envrc");
  EXPECT_EQ(back.entries(0).change(), "created");
  EXPECT_EQ(back.entries(0).held_unix(), 5);
  EXPECT_EQ(back.profile(), "dev");
}

}  // namespace
}  // namespace lazaret::cli::held
