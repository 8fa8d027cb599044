#include "services/terminal/terminal_modes.h"

#include <string>

#include "gtest/gtest.h"

namespace lazaret::terminal {
namespace {

TEST(TerminalModesTest, NothingSetNeedsNothing) {
  TerminalModes m;
  m.Feed("plain text\r\n\x1b[31mred\x1b[0m \x1b[2J\x1b[H");
  EXPECT_EQ(m.alternate_screen(), 0);
  EXPECT_EQ(m.QuietSequence(), "");
  EXPECT_EQ(m.RestoreSequence(), "");
}

TEST(TerminalModesTest, LessOnTmuxIsPutBack) {
  // What less writes at start with TERM=tmux-256color: smcup, smkx.
  TerminalModes m;
  m.Feed("\x1b[?1049h\x1b[22;0;0t\x1b[?1h\x1b=\r");
  EXPECT_EQ(m.alternate_screen(), 1049);
  EXPECT_EQ(m.RestoreSequence(), "\x1b[?1049h\x1b[?1h\x1b=");
  EXPECT_EQ(m.QuietSequence(), "");
  // And when it quits: rmkx, rmcup.
  m.Feed("\r\x1b[K\x1b[?1l\x1b>\x1b[?1049l\x1b[23;0;0t");
  EXPECT_EQ(m.alternate_screen(), 0);
  EXPECT_EQ(m.RestoreSequence(), "");
}

TEST(TerminalModesTest, AnyChunkingGivesTheSameState) {
  const std::string out =
      "x\x1b[?1049h\x1b]2;title \x1b[?47h not a mode\x07\x1b[?1000;1006h\x1b[?25l\x1b[?2004h";
  TerminalModes whole;
  whole.Feed(out);
  for (size_t cut = 0; cut <= out.size(); ++cut) {
    TerminalModes split;
    split.Feed(out.substr(0, cut));
    split.Feed(out.substr(cut));
    EXPECT_EQ(split.RestoreSequence(), whole.RestoreSequence()) << "cut at " << cut;
  }
  TerminalModes bytewise;
  for (char c : out) bytewise.Feed(std::string(1, c));
  EXPECT_EQ(bytewise.RestoreSequence(), whole.RestoreSequence());
  EXPECT_EQ(whole.RestoreSequence(), "\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?25l");
}

TEST(TerminalModesTest, MouseFocusAndPasteAreQuietedForThePrompt) {
  TerminalModes m;
  m.Feed("\x1b[?1002h\x1b[?1004h\x1b[?1015h\x1b[?2004h\x1b[?1h");
  EXPECT_EQ(m.QuietSequence(), "\x1b[?1002l\x1b[?1004l\x1b[?1015l\x1b[?2004l");
  m.Feed("\x1b[?1002;1004;1015;2004l");
  EXPECT_EQ(m.QuietSequence(), "");
  EXPECT_EQ(m.RestoreSequence(), "\x1b[?1h");
}

TEST(TerminalModesTest, StringsHideWhatLooksLikeModes) {
  // Inside OSC, DCS and APC strings, up to BEL or ST, nothing is a mode
  // (an '=' there is no keypad switch either).
  TerminalModes m;
  m.Feed("\x1b]0;=[?1049h\x07");
  m.Feed("\x1bPq=[?1h\x1b\\");
  m.Feed("\x1b_=[?2004h\x1b\\");
  EXPECT_EQ(m.RestoreSequence(), "");
  // ESC inside a string ends it and starts a sequence of its own, as in a
  // terminal.
  m.Feed("\x1b]0;t\x1b[?1049h");
  EXPECT_EQ(m.alternate_screen(), 1049);
}

TEST(TerminalModesTest, OnlyDecPrivateSetAndResetCount) {
  TerminalModes m;
  m.Feed("\x1b[1049h\x1b[>1h\x1b[?1$p\x1b[?1 h\x1b[=1h");  // ANSI, other markers, DECRQM
  EXPECT_EQ(m.RestoreSequence(), "");
  m.Feed("\x1b[?1049\x1b[?47h");  // cancelled by a new ESC
  EXPECT_EQ(m.alternate_screen(), 47);
  m.Feed("\x1b[?1047\x18h");  // CAN aborts
  EXPECT_EQ(m.alternate_screen(), 47);
}

TEST(TerminalModesTest, ResetsClearWhatTheyReset) {
  TerminalModes m;
  m.Feed("\x1b[?1049h\x1b[?1h\x1b=\x1b[?25l\x1b[?1000h");
  m.Feed("\x1b[!p");  // DECSTR: cursor keys, keypad, cursor
  EXPECT_EQ(m.RestoreSequence(), "\x1b[?1049h\x1b[?1000h");
  m.Feed(
      "\x1b"
      "c");  // RIS: everything
  EXPECT_EQ(m.RestoreSequence(), "");
}

TEST(TerminalModesTest, HugeAndManyParametersCostNothing) {
  TerminalModes m;
  std::string many = "\x1b[?";
  for (int i = 0; i < 1000; ++i) many += "7;";
  many += "1049h";
  m.Feed(many);
  EXPECT_EQ(m.alternate_screen(), 0);  // beyond the 16 parameters kept
  m.Feed("\x1b[?99999999999999999999h\x1b[?1;1049h");
  EXPECT_EQ(m.alternate_screen(), 1049);
  EXPECT_EQ(m.RestoreSequence(), "\x1b[?1049h\x1b[?1h");
}

}  // namespace
}  // namespace lazaret::terminal
