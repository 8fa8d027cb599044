#include "services/brokerd/command/entries.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "services/common/fs/test_dir.h"

namespace lazaret::brokerd::command {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ResolveEntriesTest : public fs::ScratchTest {
 protected:
  void SetUp() override {
    ScratchTest::SetUp();
    Write("gh", "#!/bin/sh\n");
    ASSERT_EQ(chmod(P("gh").c_str(), 0755), 0);
  }
  void Add(std::vector<std::string> argv, bool exact, const std::string& text) {
    lazaret::config::v1::CommandPrefix* p = policy_.add_auto_approve();
    for (const std::string& a : argv) p->add_argv(a);
    p->set_exact(exact);
    p->set_text(text);
  }
  lazaret::config::v1::EscalationPolicy policy_;
};

TEST_F(ResolveEntriesTest, ResolvesEachEntryAndDropsMissingCommands) {
  Add({"gh", "pr", "view"}, false, "gh pr view");
  Add({"lazaret-missing", "x"}, true, "lazaret-missing x");
  Add({"gh", "auth", "status"}, true, "gh auth status");
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<AutoApproveEntry>> entries = ResolveEntries(policy_, &warnings, base_);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_THAT((*entries)[0].argv, ElementsAre("gh", "pr", "view"));
  EXPECT_FALSE((*entries)[0].exact);
  EXPECT_EQ((*entries)[0].binary.path, P("gh"));
  struct stat st {};
  ASSERT_EQ(stat(P("gh").c_str(), &st), 0);
  EXPECT_EQ((*entries)[0].binary.ino, st.st_ino);
  EXPECT_TRUE((*entries)[1].exact);
  EXPECT_EQ((*entries)[1].text, "gh auth status");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("'lazaret-missing x' is not used"));
  EXPECT_THAT(warnings[0], HasSubstr("is not a command on the host's PATH"));
}

TEST_F(ResolveEntriesTest, EntriesTheListingRuleRefusesAreErrors) {
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {}, {"./gh"}, {"A=b", "gh"}, {"gh", "$(id)"}, {"gh", "pr\u202e"}}) {
    policy_.clear_auto_approve();
    Add(argv, false, "entry");
    EXPECT_TRUE(absl::IsInvalidArgument(ResolveEntries(policy_, nullptr, base_).status()));
  }
}

TEST_F(ResolveEntriesTest, OptionsReachTheEntryAndAreCheckedAgain) {
  Add({"gh", "pr", "view"}, false, "gh pr view");
  policy_.mutable_auto_approve(0)->add_options("--json");
  policy_.mutable_auto_approve(0)->add_options("--comments");
  absl::StatusOr<std::vector<AutoApproveEntry>> entries = ResolveEntries(policy_, nullptr, base_);
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_THAT((*entries)[0].options, ElementsAre("--json", "--comments"));

  // An option list the listing rule never passes is an error here too.
  for (const char* bad : {"json", "-", "--json=x", "--a;b", "--x\u200b"}) {
    policy_.mutable_auto_approve(0)->clear_options();
    policy_.mutable_auto_approve(0)->add_options(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(ResolveEntries(policy_, nullptr, base_).status())) << bad;
  }
  policy_.clear_auto_approve();
  Add({"gh", "pr", "view", "1"}, true, "gh pr view 1");
  policy_.mutable_auto_approve(0)->add_options("--web");
  EXPECT_TRUE(absl::IsInvalidArgument(ResolveEntries(policy_, nullptr, base_).status()));
}

}  // namespace
}  // namespace lazaret::brokerd::command
