#include "clients/lazaret/config/terminal_text.h"

#include <gtest/gtest.h>

#include <string>

namespace lazaret::cli::config {
namespace {

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
