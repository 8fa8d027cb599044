#include "clients/lazaret/attach/detach_keys.h"

#include <string>

#include "gtest/gtest.h"

namespace lazaret::cli::attach {
namespace {

using Action = DetachKeys::Action;

TEST(DetachKeysTest, PlainKeysPassThrough) {
  DetachKeys k;
  DetachKeys::Result r = k.Feed("ls -l\r");
  EXPECT_EQ(r.send, "ls -l\r");
  EXPECT_EQ(r.action, Action::kNone);
  EXPECT_EQ(r.consumed, 6u);
}

TEST(DetachKeysTest, PrefixThenDDetachesAndKeepsTheRest) {
  DetachKeys k;
  DetachKeys::Result r = k.Feed("ab\x1c" "dxy");
  EXPECT_EQ(r.send, "ab");
  EXPECT_EQ(r.action, Action::kDetach);
  EXPECT_EQ(r.consumed, 4u);
}

TEST(DetachKeysTest, PrefixIsHeldAcrossReads) {
  DetachKeys k;
  DetachKeys::Result r = k.Feed("\x1c");
  EXPECT_EQ(r.send, "");
  EXPECT_TRUE(k.holding());
  r = k.Feed("i");
  EXPECT_EQ(r.action, Action::kTakeInput);
  EXPECT_EQ(r.send, "");
  EXPECT_FALSE(k.holding());
}

TEST(DetachKeysTest, PrefixThenAnotherKeySendsBoth) {
  DetachKeys k;
  EXPECT_EQ(k.Feed("\x1c" "x").send, "\x1c" "x");
  EXPECT_EQ(k.Feed("\x1c\x1c").send, "\x1c\x1c");
  EXPECT_FALSE(k.holding());
}

TEST(DetachKeysTest, PrefixInsideBracketedPasteIsText) {
  DetachKeys k;
  const std::string paste = "\x1b[200~a\x1c" "d\x1b[201~";
  DetachKeys::Result r = k.Feed(paste);
  EXPECT_EQ(r.action, Action::kNone);
  EXPECT_EQ(r.send, paste);
  // After the paste the prefix works again.
  r = k.Feed("\x1c" "d");
  EXPECT_EQ(r.action, Action::kDetach);
}

TEST(DetachKeysTest, PasteBracketSplitAcrossReads) {
  DetachKeys k;
  EXPECT_EQ(k.Feed("\x1b[2").send, "\x1b[2");
  EXPECT_EQ(k.Feed("00~\x1c" "d").action, Action::kNone);
  EXPECT_EQ(k.Feed("\x1b[201").action, Action::kNone);
  EXPECT_EQ(k.Feed("~\x1c" "d").action, Action::kDetach);
}

TEST(DetachKeysTest, EscapeSequenceOtherThanPasteDoesNotStartOne) {
  DetachKeys k;
  EXPECT_EQ(k.Feed("\x1b[A\x1b[20").action, Action::kNone);
  EXPECT_EQ(k.Feed("1~\x1c" "d").action, Action::kDetach);
}

}  // namespace
}  // namespace lazaret::cli::attach
