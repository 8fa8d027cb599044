#include "services/vocab/shell_words.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lazaret::vocab {
namespace {

using ::testing::ElementsAreArray;

struct Case {
  const char* text;
  std::vector<std::string> words;
};

TEST(ShellWordsTest, SplitsLikeAPosixShellWithoutExpanding) {
  const Case cases[] = {
      {"", {}},
      {"   ", {}},
      {"aws sts get-caller-identity", {"aws", "sts", "get-caller-identity"}},
      {"  a\t b\nc  ", {"a", "b", "c"}},
      {"'a b' c", {"a b", "c"}},
      {"\"a b\" c", {"a b", "c"}},
      {"a'b'\"c\"d", {"abcd"}},
      {"''", {""}},
      {"a \"\" b", {"a", "", "b"}},
      {"'$HOME' \"$HOME\"", {"$HOME", "$HOME"}},
      {"\"a\\\"b\"", {"a\"b"}},
      {"\"a\\$b\\`c\\\\d\"", {"a$b`c\\d"}},
      {"\"a\\nb\"", {"a\\nb"}},
      {"'a\\b'", {"a\\b"}},
      {"a\\ b", {"a b"}},
      {"a\\\nb", {"ab"}},
      {"a #comment\nb", {"a", "b"}},
      {"a#b", {"a#b"}},
      {"# only a comment", {}},
      {"x;y", {"x;y"}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<std::string>> words = SplitShellWords(c.text);
    ASSERT_TRUE(words.ok()) << c.text << ": " << words.status();
    EXPECT_THAT(*words, ElementsAreArray(c.words)) << c.text;
  }
}

TEST(ShellWordsTest, RefusesUnterminatedQuotesAndTrailingBackslash) {
  for (const char* text : {"'abc", "\"abc", "a \"b\\\"", "abc\\", "'a''b"}) {
    EXPECT_FALSE(SplitShellWords(text).ok()) << text;
  }
}

}  // namespace
}  // namespace lazaret::vocab
