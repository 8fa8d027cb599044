#include "services/terminal/output_filter.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace lazaret::terminal {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";

// Filters `in` whole, then split in two at every byte and one byte at a
// time with fresh filters: a sequence split anywhere must come out the
// same. Returns the output.
std::string Filtered(std::string_view in, bool clipboard_write = false) {
  const OutputPolicy policy{clipboard_write};
  const std::string whole = OutputFilter(policy).Filter(in);
  for (size_t cut = 0; cut <= in.size(); ++cut) {
    OutputFilter f(policy);
    std::string out = f.Filter(in.substr(0, cut));
    out += f.Filter(in.substr(cut));
    EXPECT_EQ(out, whole) << "split at byte " << cut;
  }
  OutputFilter bytewise(policy);
  std::string out;
  for (char c : in) bytewise.Filter(std::string_view(&c, 1), &out);
  EXPECT_EQ(out, whole) << "one byte at a time";
  return whole;
}

void ExpectPassed(std::string_view in, bool clipboard_write = false) {
  EXPECT_EQ(Filtered(in, clipboard_write), in);
}

void ExpectRemoved(std::string_view seq, bool clipboard_write = false) {
  // Removed whole: the text around it stays, nothing of the sequence.
  const std::string in = "a" + std::string(seq) + "b";
  EXPECT_EQ(Filtered(in, clipboard_write), "ab") << "sequence: " << testing::PrintToString(seq);
}

TEST(OutputFilterTest, TextUtf8AndScreenControlsPass) {
  ExpectPassed("hello, world\r\n\tcol\bx\a\x0e\x0f");
  ExpectPassed("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9d\x84\x9e \xe4\xb8\xad");
}

TEST(OutputFilterTest, CursorEraseAndSgrPass) {
  ExpectPassed("\x1b[1;31mred\x1b[0m\x1b[2J\x1b[H\x1b[10;20H\x1b[K\x1b[3A\x1b[5X");
  ExpectPassed("\x1b[38:2::255:0:0m\x1b[4:3m\x1b[58;5;196m\x1b[m");
  ExpectPassed("\x1b[5;20r\x1b[s\x1b[u\x1b[3g\x1b[2b\x1b[4h\x1b[4l\x1b[?1J\x1b[6 q\x1b[!p");
  ExpectPassed("\x1b" "7\x1b" "8\x1b=\x1b>\x1bM\x1b" "D\x1b" "E\x1b" "c\x1b(0\x1b(B\x1b)0\x1b#8");
}

TEST(OutputFilterTest, LessAndVimSequencesPass) {
  // less with TERM=tmux-256color: smcup, title stack, smkx; then at quit.
  ExpectPassed("\x1b[?1049h\x1b[22;0;0t\x1b[?1h\x1b=\r");
  ExpectPassed("\r\x1b[K\x1b[?1l\x1b>\x1b[?1049l\x1b[23;0;0t");
  // vim 9 at start and exit: modifyOtherKeys, bracketed paste, focus,
  // cursor style, background query, kitty keyboard query, DA, DECRQM.
  ExpectPassed(
      "\x1b[?1049h\x1b[22;0;0t\x1b[>4;2m\x1b[?1h\x1b=\x1b[?2004h\x1b[?1004h\x1b[1;24r"
      "\x1b[?12h\x1b[?12l\x1b[22;2t\x1b[22;1t\x1b[27m\x1b[23m\x1b[29m\x1b[m\x1b[H\x1b[2J"
      "\x1b]11;?\x07\x1b[?u\x1b[c\x1b[>c\x1b[?12$p\x1b[2 q\x1b[?25l\x1b[?25h");
  ExpectPassed("\x1b[?2004l\x1b[?1004l\x1b[>4;m\x1b[23;2t\x1b[23;1t\x1b[?1l\x1b>\x1b[?1049l");
}

TEST(OutputFilterTest, MouseFocusPasteAndSyncModesPass) {
  ExpectPassed("\x1b[?1000h\x1b[?1002h\x1b[?1003h\x1b[?1006h\x1b[?1015h\x1b[?1004h");
  ExpectPassed("\x1b[?2004h\x1b[?2026h\x1b[?2026l\x1b[?1049;1006s\x1b[?1049;1006r");
  ExpectPassed("\x1b[>1u\x1b[=1;1u\x1b[<u\x1b[?u");
}

TEST(OutputFilterTest, FixedFormatReportsPass) {
  // Answers made only of numbers the terminal chose and its own name.
  ExpectPassed("\x1b[5n\x1b[6n\x1b[?6n\x1b[?996n\x1b[c\x1b[0c\x1b[>c\x1b[=c\x1b[>q");
  ExpectPassed("\x1b[14t\x1b[14;2t\x1b[16t\x1b[18t\x1b[19t\x1b[?2004$p\x1b[4$p");
}

TEST(OutputFilterTest, ClipboardWriteRemovedByDefault) {
  // The measured attack: the host clipboard then holds a command line.
  ExpectRemoved("\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07");
  ExpectRemoved("\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x1b\\");
  ExpectRemoved("\x1b]52;;Zm9v\x07");
  ExpectRemoved("\x1b]52;p;\x07");
}

TEST(OutputFilterTest, ClipboardWritePassesWhenAllowed) {
  ExpectPassed("\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07", true);
  ExpectPassed("\x1b]52;c;Zm9v\x1b\\", true);
  // Not base64, or a selection no terminal knows: removed still.
  ExpectRemoved("\x1b]52;c;foo bar\x07", true);
  ExpectRemoved("\x1b]52;x;Zm9v\x07", true);
}

TEST(OutputFilterTest, ClipboardReadAlwaysRemoved) {
  // The terminal would type the developer's clipboard into the sandbox.
  ExpectRemoved("\x1b]52;c;?\x07");
  ExpectRemoved("\x1b]52;c;?\x07", true);
  ExpectRemoved("\x1b]52;c;?\x1b\\", true);
}

TEST(OutputFilterTest, OverlongClipboardWriteRemovedWhole) {
  const std::string data(OutputFilter::kMaxClipboard, 'A');
  OutputFilter f(OutputPolicy{true});
  std::string out = f.Filter("x\x1b]52;c;" + data);
  out += f.Filter("\x07y");
  EXPECT_EQ(out, "xy");
}

TEST(OutputFilterTest, TitlesPassAsTextOnly) {
  ExpectPassed("\x1b]0;make test\x07");
  ExpectPassed("\x1b]2;t\xc3\xaftle \xe2\x9c\x93\x1b\\");
  ExpectPassed("\x1b]1;\x07");
  // A control or a C1 code point in a title: removed whole.
  ExpectRemoved("\x1b]2;a\x01" "b\x07");
  ExpectRemoved("\x1b]2;a\xc2\x9b" "b\x07");
  ExpectRemoved("\x1b]2;a\xff" "b\x07");
}

TEST(OutputFilterTest, OverlongTitleRemovedWhole) {
  const std::string title(OutputFilter::kMaxTitle + 1, 't');
  EXPECT_EQ(OutputFilter(OutputPolicy{}).Filter("a\x1b]2;" + title + "\x07" + "b"), "ab");
  const std::string fits(OutputFilter::kMaxTitle - 2, 't');
  const std::string ok = "\x1b]2;" + fits + "\x07";
  EXPECT_EQ(OutputFilter(OutputPolicy{}).Filter(ok), ok);
}

TEST(OutputFilterTest, TitleAndIconReportsRemoved) {
  // The classic attack: set the title to a command line, ask for it, and
  // the terminal types it into the shell after the program ends.
  EXPECT_EQ(Filtered("\x1b]2;rm -rf ~\x07\x1b[21t"), "\x1b]2;rm -rf ~\x07");
  ExpectRemoved("\x1b[20t");
  ExpectRemoved("\x1b[21t");
  ExpectRemoved("\x1b[21;0t");
}

TEST(OutputFilterTest, WindowOperationsRemoved) {
  ExpectRemoved("\x1b[1t");             // de-iconify
  ExpectRemoved("\x1b[2t");             // iconify
  ExpectRemoved("\x1b[3;0;0t");         // move
  ExpectRemoved("\x1b[4;2000;3000t");   // resize in pixels
  ExpectRemoved("\x1b[5t");             // raise
  ExpectRemoved("\x1b[8;100;300t");     // resize in characters
  ExpectRemoved("\x1b[9;1t");           // maximize
  ExpectRemoved("\x1b[10;1t");          // full screen
  ExpectRemoved("\x1b[11t");            // state report
  ExpectRemoved("\x1b[13t");            // position report
  ExpectRemoved("\x1b[48t");            // DECSLPP
  ExpectRemoved("\x1b[t");
  ExpectRemoved("\x1b[>3t");            // title modes
}

TEST(OutputFilterTest, OtherOscRemoved) {
  ExpectRemoved("\x1b]7;file://host/home/dev\x07");                // cwd
  ExpectRemoved("\x1b]9;build done\x07");                          // notification
  ExpectRemoved("\x1b]777;notify;title;body\x1b\\");
  ExpectRemoved("\x1b]99;i=1;hello\x1b\\");
  ExpectRemoved("\x1b]1337;File=name=eA==;inline=1:AAAA\x07");     // iTerm2
  ExpectRemoved("\x1b]5522;type=write\x1b\\");                     // kitty clipboard
  ExpectRemoved("\x1b]5113;ac=send\x1b\\");                        // kitty file transfer
  ExpectRemoved("\x1b]51;[\"call\",\"Tapi_x\"]\x07");              // vim terminal API
  ExpectRemoved("\x1b]50;?\x07");                                  // font query
  ExpectRemoved("\x1b]l title\x1b\\");
  ExpectRemoved("\x1b]1234567;x\x07");
  ExpectRemoved("\x1b]\x07");
}

TEST(OutputFilterTest, ColoursHyperlinksAndMarksPass) {
  ExpectPassed("\x1b]4;1;rgb:ff/00/00\x07\x1b]4;1;?\x07\x1b]104\x07\x1b]104;1\x1b\\");
  ExpectPassed("\x1b]10;?\x07\x1b]11;#000000\x1b\\\x1b]12;red\x07\x1b]110\x07\x1b]119\x07");
  ExpectPassed("\x1b]8;id=1;https://example.com/a?b=c\x1b\\link\x1b]8;;\x1b\\");
  ExpectPassed("\x1b]133;A\x07$ \x1b]133;B\x07ls\r\n\x1b]133;C\x07\x1b]133;D;0\x07");
  // Non-ASCII in a colour or a link: removed.
  ExpectRemoved("\x1b]8;;https://ex\xc3\xa4mple.com\x07");
  ExpectRemoved("\x1b]11;r\x01" "ed\x07");
}

TEST(OutputFilterTest, DcsApcPmSosRemoved) {
  ExpectRemoved("\x1bP$qm\x1b\\");                    // DECRQSS
  ExpectRemoved("\x1bP+q544e\x1b\\");                 // XTGETTCAP
  ExpectRemoved("\x1bPq#0;2;0;0;0~~@@\x1b\\");       // sixel
  ExpectRemoved("\x1bP1000p\x1b\\");                  // tmux control mode
  ExpectRemoved("\x1b_Gf=100,a=T;AAAA\x1b\\");        // kitty graphics
  ExpectRemoved("\x1b^privacy\x1b\\");
  ExpectRemoved("\x1bXstring\x1b\\");
  // A BEL does not end a DCS: what follows it is still the DCS.
  ExpectRemoved("\x1bPq\x07" "echo pwned\x1b\\");
}

TEST(OutputFilterTest, TmuxPassthroughNeverReachesTheOuterTerminal) {
  const std::string wrapped = "\x1bPtmux;\x1b\x1b]52;c;Zm9v\x07\x1b\\";
  EXPECT_EQ(Filtered("a" + wrapped + "b"), "ab");
  // With clipboard writes allowed, what reaches the terminal is a plain
  // OSC 52 (allowed), never the passthrough.
  EXPECT_EQ(Filtered("a" + wrapped + "b", true), "a\x1b]52;c;Zm9v\x07" "b");
  ExpectRemoved("\x1bPtmux;\x1b\x1b[21t\x1b\\");
}

TEST(OutputFilterTest, EightBitC1ControlsRemoved) {
  for (const char c : std::string("\x90\x98\x9b\x9d\x9e\x9f\x9c\x85")) {
    const std::string in = std::string("a") + c + "21tb";
    EXPECT_EQ(Filtered(in), "a" + std::string(kReplacement) + "21tb");
  }
  // The same controls written as UTF-8 code points: xterm acts on them.
  ExpectRemoved("\xc2\x9b");
  ExpectRemoved("\xc2\x9d");
  ExpectRemoved("\xc2\x90");
  EXPECT_EQ(Filtered("\xc2\x9b" "21t"), "21t");
}

TEST(OutputFilterTest, MalformedUtf8Replaced) {
  EXPECT_EQ(Filtered("\xe2\x82" "a"), std::string(kReplacement) + "a");
  EXPECT_EQ(Filtered("\xc0\xaf"), std::string(kReplacement) + std::string(kReplacement));
  EXPECT_EQ(Filtered("\xed\xa0\x80"), std::string(kReplacement) + std::string(kReplacement) +
                                          std::string(kReplacement));
  EXPECT_EQ(Filtered("\xf4\x90\x80\x80").find('\x90'), std::string::npos);
  EXPECT_EQ(Filtered("\xe2\x1b[m"), std::string(kReplacement) + "\x1b[m");
}

TEST(OutputFilterTest, OtherC0ControlsRemoved) {
  ExpectRemoved("\x05");  // ENQ: the terminal would type its answerback
  ExpectRemoved(std::string_view("\x00", 1));
  ExpectRemoved("\x1c\x1d\x1e\x1f\x7f\x11\x13");
}

TEST(OutputFilterTest, EncodingAndControlWidthSwitchesRemoved) {
  ExpectRemoved("\x1b%@");  // leave UTF-8: raw bytes would become C1
  ExpectRemoved("\x1b%G");
  ExpectRemoved("\x1b G");  // S8C1T: answers in 8-bit controls
  ExpectRemoved("\x1b F");
  ExpectRemoved("\x1bZ");   // DECID
  ExpectRemoved("\x1b\\");  // a lone ST
  ExpectRemoved("\x1b(((B");
}

TEST(OutputFilterTest, CsiBeyondTheScreenRemoved) {
  ExpectRemoved("\x1b[5i");         // printer controller: output to a printer
  ExpectRemoved("\x1b[4i");
  ExpectRemoved("\x1b[?5i");
  ExpectRemoved("\x1b[1q");         // keyboard LEDs
  ExpectRemoved("\x1b[62;1\"p");    // conformance level (8-bit answers)
  ExpectRemoved("\x1b[1;1;1;1;1;1*y");  // rectangle checksum: reads the screen
  ExpectRemoved("\x1b[2h");         // KAM: locks the keyboard
  ExpectRemoved("\x1b[12l");        // SRM: local echo
  ExpectRemoved("\x1b[20h");        // LNM
  ExpectRemoved("\x1b[4;2h");       // any mode in the list not allowed
  ExpectRemoved("\x1b[?1034h");     // 8-bit meta input
  ExpectRemoved("\x1b[?1042h");     // urgency on bell
  ExpectRemoved("\x1b[?1043h");     // raise on bell
  ExpectRemoved("\x1b[?3h");        // 132 columns (resizes the window)
  ExpectRemoved("\x1b[?1049;1043h");
  ExpectRemoved("\x1b[?1:2h");
  ExpectRemoved("\x1b[>1p");
  ExpectRemoved("\x1b[x");
  ExpectRemoved("\x1b[?15$q");
  ExpectRemoved("\x1b[1?m");        // a private marker out of place
  ExpectRemoved("\x1b[1 1m");       // a parameter after an intermediate
}

TEST(OutputFilterTest, OverlongCsiRemovedWhole) {
  const std::string params(OutputFilter::kMaxCsi + 1, ';');
  EXPECT_EQ(Filtered("a\x1b[" + params + "mb"), "ab");
  const std::string fits(OutputFilter::kMaxCsi - 1, ';');
  ExpectPassed("\x1b[" + fits + "m");
}

TEST(OutputFilterTest, ControlsInsideASequenceActAndTheSequenceGoesOn) {
  EXPECT_EQ(Filtered("\x1b[1\n;31m"), "\n\x1b[1;31m");
  EXPECT_EQ(Filtered("\x1b\r[m"), "\r\x1b[m");
  EXPECT_EQ(Filtered("\x1b[1\x05m"), "\x1b[1m");
}

TEST(OutputFilterTest, EscCancelsAndCanSubAbort) {
  EXPECT_EQ(Filtered("\x1b]2;abc\x1b[31m"), "\x1b[31m");
  EXPECT_EQ(Filtered("\x1b[12\x1b[m"), "\x1b[m");
  EXPECT_EQ(Filtered("\x1b[12\x18m"), "m");
  EXPECT_EQ(Filtered("\x1b]0;x\x1a" "y"), "y");
  EXPECT_EQ(Filtered("\x1b\x1b[m"), "\x1b[m");
  EXPECT_EQ(Filtered("\x1b]7;x\x1b[m"), "\x1b[m");
  EXPECT_EQ(Filtered("\x1bPq\x1b[m"), "\x1b[m");
}

TEST(OutputFilterTest, IncompleteSequenceIsHeldUntilItEnds) {
  OutputFilter f(OutputPolicy{});
  EXPECT_EQ(f.Filter("ab\x1b[3"), "ab");
  EXPECT_EQ(f.Filter("1mc\xe2\x9c"), "\x1b[31mc");
  EXPECT_EQ(f.Filter("\x93"), "\xe2\x9c\x93");
  EXPECT_EQ(f.Filter("\x1b]2;ti"), "");
  EXPECT_EQ(f.Filter("tle\x07"), "\x1b]2;title\x07");
}

TEST(OutputFilterTest, RemovedCountsSequences) {
  OutputFilter f(OutputPolicy{});
  f.Filter("\x1b]52;c;Zm9v\x07\x1b[21t\x1bP$qm\x1b\\ok\x1b[m");
  EXPECT_EQ(f.removed(), 3u);
}

TEST(OutputFilterTest, OutputIsAFixedPoint) {
  // What the filter passes, it passes again unchanged: the output holds
  // no partial sequence the next chunk could complete.
  const std::string in =
      "x\x1b[1;3\x1b]52;c;?\x07\x9b\xc2\x9b\x1b]2;t\x07\x1bP\x1b\\\x1b[?1049h\xe2\x82\x1b[21t";
  const std::string once = Filtered(in);
  EXPECT_EQ(Filtered(once), once);
}

}  // namespace
}  // namespace lazaret::terminal
