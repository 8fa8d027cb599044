#include "clients/lazaret/held/command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>

#include <string>

#include "clients/lazaret/held/store.h"
#include "services/common/fs/test_dir.h"

namespace lazaret::cli::held {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseHeldArgsTest, VerbsProfilePathsAndOptions) {
  absl::StatusOr<HeldArgs> a = ParseHeldArgs({});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->verb, HeldArgs::Verb::kList);

  a = ParseHeldArgs({"dev", "--json"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->profile, "dev");
  EXPECT_TRUE(a->json);

  a = ParseHeldArgs({"diff", ".envrc", "--profile=dev", "--workspace", "/w", "--", "-odd"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->verb, HeldArgs::Verb::kDiff);
  EXPECT_EQ(a->paths, (std::vector<std::string>{".envrc", "-odd"}));
  EXPECT_EQ(a->profile, "dev");
  EXPECT_EQ(a->workspace, "/w");

  a = ParseHeldArgs({"apply", "--all", "--yes", "--config", "/c.toml"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->all);
  EXPECT_TRUE(a->yes);
  EXPECT_EQ(a->explicit_config, "/c.toml");

  EXPECT_FALSE(ParseHeldArgs({"apply"}).ok());                    // nothing named
  EXPECT_FALSE(ParseHeldArgs({"drop", "--all", ".envrc"}).ok());  // both
  EXPECT_FALSE(ParseHeldArgs({"diff", "--json"}).ok());
  EXPECT_FALSE(ParseHeldArgs({"list", "--yes"}).ok());
  EXPECT_FALSE(ParseHeldArgs({"list", "a", "b"}).ok());
  EXPECT_FALSE(ParseHeldArgs({"--bogus"}).ok());
  EXPECT_FALSE(ParseHeldArgs({"--workspace"}).ok());
  EXPECT_TRUE(ParseHeldArgs({"apply", "--help"})->help);
}

class HeldCommandTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    fs::ScratchTest::SetUp();
    ASSERT_EQ(mkdir(P("profile").c_str(), 0700), 0);
    ASSERT_EQ(mkdir(P("ws").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(P("view").c_str(), 0755), 0);
    ctx_.profile = "dev";
    ctx_.profile_dir = P("profile");
    ctx_.workspace = P("ws");
  }

  void HoldView(const std::string& rel, const std::string& text) {
    Write("view/" + rel, text);
    absl::StatusOr<Store> s = Store::Open(P("profile"), P("ws"), true);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE(s->Hold(*fs::DirFd::Open(P("view")), rel, Change::kChanged, "0123456789ab").ok());
  }

  // Runs the command with `input` on its stdin; fills out_ and err_.
  int Run(const std::vector<std::string>& args, const std::string& input) {
    absl::StatusOr<HeldArgs> a = ParseHeldArgs(args);
    EXPECT_TRUE(a.ok()) << a.status();
    FILE* in = fmemopen(const_cast<char*>(input.data()), input.size(), "r");
    char* out_buf = nullptr;
    size_t out_size = 0;
    char* err_buf = nullptr;
    size_t err_size = 0;
    FILE* out = open_memstream(&out_buf, &out_size);
    FILE* err = open_memstream(&err_buf, &err_size);
    HeldContext c = ctx_;
    c.in = in;
    c.out = out;
    c.err = err;
    const int rc = RunHeld(*a, c);
    fclose(in);
    fclose(out);
    fclose(err);
    out_.assign(out_buf, out_size);
    err_.assign(err_buf, err_size);
    free(out_buf);
    free(err_buf);
    return rc;
  }

  HeldContext ctx_;
  std::string out_, err_;
};

TEST_F(HeldCommandTest, OnATerminalEachFileIsShownAndAsked) {
  Write("ws/.envrc", "old\n");
  HoldView(".envrc", "new\n");
  HoldView(".nvmrc", "20\n");
  ctx_.interactive = true;
  // Yes for the first (.envrc), no (end of input) for the second.
  EXPECT_EQ(Run({"apply", "--all"}, "y\n"), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("-old\n+new\n"));
  EXPECT_THAT(err_, HasSubstr("Write .envrc into the folder? [y/N]"));
  EXPECT_THAT(err_, HasSubstr("Write .nvmrc into the folder? [y/N]"));
  EXPECT_THAT(out_, HasSubstr("applied: .envrc\n"));
  EXPECT_THAT(out_, HasSubstr("kept held: .nvmrc\n"));
  EXPECT_EQ(Slurp("ws/.envrc"), "new\n");
  EXPECT_FALSE(Exists("ws/.nvmrc"));

  EXPECT_EQ(Run({"drop", ".nvmrc"}, "n\n"), 0);
  EXPECT_THAT(out_, HasSubstr("kept held: .nvmrc\n"));
  EXPECT_EQ(Run({"drop", ".nvmrc"}, "yes\n"), 0);
  EXPECT_THAT(out_, HasSubstr("dropped: .nvmrc\n"));
  EXPECT_EQ(Run({"list"}, ""), 0);
  EXPECT_THAT(out_, HasSubstr("nothing held"));
}

TEST_F(HeldCommandTest, ALiveSessionRefusesApplyButNotDrop) {
  HoldView(".envrc", "new\n");
  HoldView(".nvmrc", "20\n");
  ctx_.check_no_session = [] { return absl::FailedPreconditionError("session abc is running"); };
  EXPECT_EQ(Run({"apply", ".envrc", "--yes"}, ""), 1);
  EXPECT_THAT(err_, HasSubstr("session abc is running"));
  EXPECT_FALSE(Exists("ws/.envrc"));
  EXPECT_EQ(Run({"drop", ".nvmrc", "--yes"}, ""), 0) << err_;
  EXPECT_EQ(out_, "dropped: .nvmrc\n");
}

TEST_F(HeldCommandTest, StyledOutputMarksEscapesAndNothingElseReachesTheTerminal) {
  HoldView(".envrc", "a\x1b[31mb\n");
  ctx_.styled = true;
  EXPECT_EQ(Run({"diff"}, ""), 0) << err_;
  EXPECT_THAT(out_, HasSubstr("\x1b[7m\\x1b\x1b[27m"));
  EXPECT_THAT(out_, Not(HasSubstr("\x1b[31mb")));
}

}  // namespace
}  // namespace lazaret::cli::held
