#include "clients/lazaret/approve/line_editor.h"

#include "gtest/gtest.h"

namespace lazaret::cli::approve {
namespace {

void Type(LineEditor& e, const std::u32string& s) {
  for (char32_t c : s) ASSERT_TRUE(e.HandleKey(Key::Char(c)));
}

TEST(LineEditorTest, StartsAtTheEndOfTheGivenText) {
  LineEditor e("ls -l");
  EXPECT_EQ(e.Text(), "ls -l");
  EXPECT_EQ(e.cursor(), 5u);
  EXPECT_EQ(e.CursorColumn(), 5u);
}

TEST(LineEditorTest, InsertsAtTheCursor) {
  LineEditor e("lsl");
  e.HandleKey(Key::Of(Key::kLeft));
  Type(e, U" -");
  EXPECT_EQ(e.Text(), "ls -l");
  EXPECT_EQ(e.cursor(), 4u);
}

TEST(LineEditorTest, BackspaceAndDelete) {
  LineEditor e("abcd");
  e.HandleKey(Key::Of(Key::kBackspace));
  EXPECT_EQ(e.Text(), "abc");
  e.HandleKey(Key::Of(Key::kHome));
  e.HandleKey(Key::Of(Key::kDelete));
  EXPECT_EQ(e.Text(), "bc");
  e.HandleKey(Key::Of(Key::kBackspace));  // at the start: nothing
  EXPECT_EQ(e.Text(), "bc");
  e.HandleKey(Key::Of(Key::kEnd));
  e.HandleKey(Key::Ctrl('d'));  // at the end: nothing
  EXPECT_EQ(e.Text(), "bc");
  e.HandleKey(Key::Ctrl('h'));
  EXPECT_EQ(e.Text(), "b");
}

TEST(LineEditorTest, HomeEndAndCtrlAE) {
  LineEditor e("hello");
  e.HandleKey(Key::Ctrl('a'));
  EXPECT_EQ(e.cursor(), 0u);
  e.HandleKey(Key::Ctrl('e'));
  EXPECT_EQ(e.cursor(), 5u);
  e.HandleKey(Key::Of(Key::kHome));
  EXPECT_EQ(e.cursor(), 0u);
  e.HandleKey(Key::Of(Key::kLeft));
  EXPECT_EQ(e.cursor(), 0u);
  e.HandleKey(Key::Of(Key::kEnd));
  e.HandleKey(Key::Of(Key::kRight));
  EXPECT_EQ(e.cursor(), 5u);
  e.HandleKey(Key::Ctrl('b'));
  EXPECT_EQ(e.cursor(), 4u);
  e.HandleKey(Key::Ctrl('f'));
  EXPECT_EQ(e.cursor(), 5u);
}

TEST(LineEditorTest, WordJumps) {
  LineEditor e("git push --force origin");
  e.HandleKey(Key::Alt('b'));
  EXPECT_EQ(e.cursor(), 17u);  // origin
  e.HandleKey(Key::Of(Key::kCtrlLeft));
  EXPECT_EQ(e.cursor(), 11u);  // force
  e.HandleKey(Key::Alt('b'));
  EXPECT_EQ(e.cursor(), 4u);  // push
  e.HandleKey(Key::Alt('b'));
  e.HandleKey(Key::Alt('b'));
  EXPECT_EQ(e.cursor(), 0u);
  e.HandleKey(Key::Alt('f'));
  EXPECT_EQ(e.cursor(), 3u);
  e.HandleKey(Key::Of(Key::kCtrlRight));
  EXPECT_EQ(e.cursor(), 8u);
  e.HandleKey(Key::Alt('f'));
  e.HandleKey(Key::Alt('f'));
  e.HandleKey(Key::Alt('f'));
  EXPECT_EQ(e.cursor(), 23u);
}

TEST(LineEditorTest, CtrlWDeletesTheBlankSeparatedWord) {
  LineEditor e("rm -rf /tmp/x  ");
  e.HandleKey(Key::Ctrl('w'));
  EXPECT_EQ(e.Text(), "rm -rf ");
  e.HandleKey(Key::Ctrl('w'));
  EXPECT_EQ(e.Text(), "rm ");
  e.HandleKey(Key::Ctrl('w'));
  EXPECT_EQ(e.Text(), "");
  e.HandleKey(Key::Ctrl('w'));
  EXPECT_EQ(e.Text(), "");
}

TEST(LineEditorTest, CtrlUAndCtrlK) {
  LineEditor e("abc def");
  e.HandleKey(Key::Alt('b'));
  e.HandleKey(Key::Ctrl('u'));
  EXPECT_EQ(e.Text(), "def");
  EXPECT_EQ(e.cursor(), 0u);
  e.HandleKey(Key::Of(Key::kRight));
  e.HandleKey(Key::Ctrl('k'));
  EXPECT_EQ(e.Text(), "d");
}

TEST(LineEditorTest, UndoRestoresEachChangeAndTypingIsOneChange) {
  LineEditor e("echo");
  Type(e, U" hi");
  e.HandleKey(Key::Ctrl('w'));
  EXPECT_EQ(e.Text(), "echo ");
  EXPECT_TRUE(e.Undo());
  EXPECT_EQ(e.Text(), "echo hi");
  e.HandleKey(Key::Ctrl('_'));
  EXPECT_EQ(e.Text(), "echo");
  EXPECT_EQ(e.cursor(), 4u);
  EXPECT_FALSE(e.Undo());
  EXPECT_EQ(e.Text(), "echo");
}

TEST(LineEditorTest, MovingSplitsTypingIntoTwoUndoSteps) {
  LineEditor e;
  Type(e, U"ab");
  e.HandleKey(Key::Of(Key::kLeft));
  Type(e, U"X");
  EXPECT_EQ(e.Text(), "aXb");
  e.HandleKey(Key::Ctrl('z'));
  EXPECT_EQ(e.Text(), "ab");
  e.HandleKey(Key::Ctrl('z'));
  EXPECT_EQ(e.Text(), "");
}

TEST(LineEditorTest, Utf8IsEditedByCodePoint) {
  LineEditor e("caf\xC3\xA9");
  EXPECT_EQ(e.cursor(), 4u);
  e.HandleKey(Key::Of(Key::kBackspace));
  EXPECT_EQ(e.Text(), "caf");
  Type(e, U"\u4E2D");
  EXPECT_EQ(e.Text(), "caf\xE4\xB8\xAD");
  EXPECT_EQ(e.CursorColumn(), 5u);
}

TEST(LineEditorTest, HiddenCharactersAreShownEscapedAndCountedSo) {
  LineEditor e(
      "a\x1b"
      "b\xE2\x80\xAE");
  EXPECT_EQ(PlainText(e.Display()), "a\\x1bb\\u{202E}");
  EXPECT_EQ(e.CursorColumn(), 14u);
  e.HandleKey(Key::Of(Key::kLeft));
  EXPECT_EQ(e.CursorColumn(), 6u);
  e.HandleKey(Key::Of(Key::kLeft));
  e.HandleKey(Key::Of(Key::kBackspace));  // the ESC
  EXPECT_EQ(e.Text(), "ab\xE2\x80\xAE");
}

TEST(LineEditorTest, InvalidBytesSurviveUntouched) {
  LineEditor e("x\xFFy");
  EXPECT_EQ(e.Text(), "x\xFFy");
  e.HandleKey(Key::Of(Key::kHome));
  Type(e, U">");
  EXPECT_EQ(e.Text(), ">x\xFFy");
}

TEST(LineEditorTest, NonEditingKeysAreLeftToTheCaller) {
  LineEditor e("x");
  EXPECT_FALSE(e.HandleKey(Key::Of(Key::kEnter)));
  EXPECT_FALSE(e.HandleKey(Key::Of(Key::kEscape)));
  EXPECT_FALSE(e.HandleKey(Key::Of(Key::kUp)));
  EXPECT_FALSE(e.HandleKey(Key::Ctrl('c')));
  EXPECT_FALSE(e.HandleKey(Key::Char(0x1b)));
  EXPECT_EQ(e.Text(), "x");
}

}  // namespace
}  // namespace lazaret::cli::approve
