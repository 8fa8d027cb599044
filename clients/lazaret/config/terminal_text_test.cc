#include "clients/lazaret/config/terminal_text.h"

#include <gtest/gtest.h>

#include <string>

namespace lazaret::cli::config {
namespace {

TEST(TerminalTextTest, PrintableAsciiIsShownAsIs) {
  EXPECT_EQ(EscapeForTerminal("allow_egress = [\"0.0.0.0/0\"] # ok"),
            "allow_egress = [\"0.0.0.0/0\"] # ok");
}

TEST(TerminalTextTest, NothingCanMoveTheCursorRecolourOrHideText) {
  // ESC sequences, CR, BS, DEL, a C1 control, a bidi override (U+202E) and
  // a zero-width space (U+200B): every byte of them becomes \xNN.
  EXPECT_EQ(EscapeForTerminal("\x1b[2Ja\rb\bc\x7f"), "\\x1b[2Ja\\x0db\\x08c\\x7f");
  EXPECT_EQ(EscapeForTerminal("\xc2\x9b"), "\\xc2\\x9b");
  EXPECT_EQ(EscapeForTerminal("x\xe2\x80\xaey"), "x\\xe2\\x80\\xaey");
  EXPECT_EQ(EscapeForTerminal("\xe2\x80\x8b"), "\\xe2\\x80\\x8b");
  EXPECT_EQ(EscapeForTerminal(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeForTerminal("tab\tnl\n"), "tab\\x09nl\\x0a");
}

TEST(TerminalTextTest, ABackslashIsDoubledSoEscapesCannotBeForged) {
  EXPECT_EQ(EscapeForTerminal("\\x1b"), "\\\\x1b");
}

TEST(TerminalTextTest, SourceLineIsOneBasedAndBounded) {
  const std::string text = "one\ntwo\n" + std::string(300, 'x');
  EXPECT_EQ(SourceLine(text, 1), "one");
  EXPECT_EQ(SourceLine(text, 2), "two");
  EXPECT_EQ(SourceLine(text, 3), std::string(200, 'x') + "...");
  EXPECT_EQ(SourceLine(text, 0), "");
  EXPECT_EQ(SourceLine(text, 4), "");
}

}  // namespace
}  // namespace lazaret::cli::config
