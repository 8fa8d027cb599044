#include "services/vocab/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace lazaret::vocab {
namespace {

TEST(Utf8Test, ValidTextDecodesToItsCodePointsAndBack) {
  const std::string text = "a\u00e9\u20ac\U0001F600";
  EXPECT_EQ(DecodeAll(text), std::u32string({U'a', 0xE9, 0x20AC, 0x1F600}));
  EXPECT_EQ(EncodeAll(DecodeAll(text)), text);
  EXPECT_TRUE(IsValidUtf8(text));
}

TEST(Utf8Test, InvalidBytesDecodeToTheirOwnCodePointAndRoundTrip) {
  // A stray continuation byte, an overlong '/', a surrogate, a code point
  // above U+10FFFF, a truncated sequence.
  for (const std::string bad :
       {"\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    const std::u32string cps = DecodeAll(bad);
    ASSERT_FALSE(cps.empty());
    EXPECT_TRUE(IsInvalidByte(cps[0])) << bad;
    EXPECT_EQ(EncodeAll(cps), bad);
    EXPECT_FALSE(IsValidUtf8(bad));
  }
}

TEST(Utf8Test, CheckNamesTheFirstInvalidByte) {
  EXPECT_TRUE(CheckUtf8("plain \u00e9").ok());
  const absl::Status s = CheckUtf8("ab\u00e9\xff");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "invalid UTF-8 at byte 4");
}

TEST(Utf8Test, TheLargestCodePointsOfEachLengthAreValid) {
  EXPECT_TRUE(IsValidUtf8("\x7f\xdf\xbf\xef\xbf\xbf\xf4\x8f\xbf\xbf"));
  EXPECT_TRUE(IsValidUtf8(""));
}

}  // namespace
}  // namespace lazaret::vocab
