#include "services/spawn/command_line.h"

#include <gtest/gtest.h>

namespace lazaret::cli {
namespace {

TEST(CommandLineTest, QuotesOnlyWhatAShellWouldSplitOrExpand) {
  EXPECT_EQ(ShellQuote("podman"), "podman");
  EXPECT_EQ(ShellQuote("--env=A=b,c:/d@e%f+g"), "--env=A=b,c:/d@e%f+g");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(CommandLine({"sh", "-c", "echo hi"}), "sh -c 'echo hi'");
}

}  // namespace
}  // namespace lazaret::cli
