#include "services/vocab/profile_name.h"

#include <gtest/gtest.h>

#include <string>

namespace lazaret::vocab {
namespace {

TEST(ProfileNameTest, TwoToThirtyTwoLowercaseLettersDigitsDashesAndUnderscores) {
  for (const char* ok : {"ab", "claude-code", "gemini_cli", "00", "-x", "_x"}) {
    EXPECT_TRUE(IsValidProfileName(ok)) << ok;
  }
  EXPECT_TRUE(IsValidProfileName(std::string(32, 'p')));
  EXPECT_FALSE(IsValidProfileName(std::string(33, 'p')));
  for (const char* bad :
       {"", "a", "Dev", "a:b", "a.b", "../x", "a/b", "a b", "$(id)", "caf\xc3\xa9"}) {
    EXPECT_FALSE(IsValidProfileName(bad)) << bad;
  }
}

}  // namespace
}  // namespace lazaret::vocab
