// What the approver shows and which keys decide, end to end (issue 20: the
// approver shows everything it approves, and no stray keystroke is ever a
// decision): a real `lazaret run` sandbox asks through the real
// /run/lazaret/escalate, the real `lazaret approve` or the inline prompt
// shows it in tmux, keys are typed with send-keys as a person would type
// them, and each case judges the host afterwards (files, the broker's
// pending count, the audit log). Shares the fixture, the agent session and
// the binary with approve_e2e_test.cc. Runs as root, rootful and rootless.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "tests/e2e/approve_e2e_fixture.h"
#include "tests/support/approver_screen.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kGuardPromptTitle[] = "lazaret run: the sandbox asks the host";

bool OnHost(const std::string& name) {
  struct stat st;
  return stat((shared->workspace.path() + "/" + name).c_str(), &st) == 0;
}

// Keys typed into `window` at 10 a second, `rounds` times over: what a
// developer might be typing to the agent when a request comes. Every key a
// prompt reads as a command is there (a, e, y, d, Q, digits, Enter); q is
// not, as it only leaves the prompt.
void TypeAtTenKeysASecond(const std::string& window, int rounds) {
  const std::vector<std::string> keys = {
      "m", "a", "k",     "e",     "Space", "t",     "e",     "s", "t",     "Enter",
      "y", "a", "Enter", "a",     "Enter", "e",     "Enter", "y", "Enter", "4",
      "8", "2", "1",     "Enter", "d",     "Enter", "Q",     "y", "Enter"};
  for (int round = 0; round < rounds; ++round) {
    for (const std::string& k : keys) {
      shared->tmux.Keys(window, {k});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

TEST_F(ApproveE2eTest, APaddedTailIsShownWholeAt80x24AndReachableByKeysAt40x12) {
  const std::string padded =
      "make test 2>&1 | tail -n 40" + std::string(150, ' ') + "; touch padded-marker";
  shared->workspace.Write(
      "padded.sh", "/run/lazaret/escalate --justify 'run the tests' -- sh -c '" + padded + "'\n");
  Approver("appr", id(), 1);
  AgentRuns("sh padded.sh", "padded");
  ASSERT_TRUE(tmux().WaitForText("appr", "1 pending", kDecisionWait));
  // The row is marked and already counts the padding.
  ASSERT_TRUE(tmux().WaitForText("appr", "! esc  sh -c 'make test 2>&1 | tail -n 40[150 spaces]"))
      << Screen("appr");
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText("appr",
                                 "[2] make test 2>&1 | tail -n 40[150 spaces]; touch "
                                 "padded-marker"))
      << Screen("appr");
  const std::string detail = Screen("appr");
  EXPECT_THAT(detail, HasSubstr("! argv[2] holds a run of 150 spaces"));
  EXPECT_THAT(detail, HasSubstr("time left"));
  // Smaller: the same request now takes scrolling, and says so.
  ASSERT_TRUE(tmux().Resize("appr", 40, 12));
  ASSERT_TRUE(tmux().WaitForText("appr", "more below: j/Down/PgDn")) << Screen("appr");
  std::string first;
  const std::string all = test::ReadApproverDetailByKeys(tmux(), "appr", 12, &first);
  EXPECT_THAT(all, HasSubstr("tail-n40[150spaces];touchpadded-marker")) << all;
  EXPECT_THAT(Screen("appr"), HasSubstr("time left")) << Screen("appr");
  ASSERT_TRUE(tmux().Keys("appr", {"d"}));
  ASSERT_TRUE(tmux().WaitForText("appr", ": reason (optional)"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-padded-240", kDecisionWait));
  EXPECT_FALSE(OnHost("padded-marker"));
  // What was shown is what the broker held.
  std::vector<AuditRecord> a = Records(id(), {"sh", "-c", padded});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(DecisionName(a[0]), "DECISION_DENIED");
  EXPECT_FALSE(a[0].ran());
}

TEST_F(ApproveE2eTest, TypingIntoTheAgentAsTheInlinePromptOpensNeverDecides) {
  // The request comes while the developer types into the agent's shell;
  // the prompt opens mid-word.
  AgentRuns(
      "(sleep 3; /run/lazaret/escalate --justify typed -- touch typed-marker > typed.out 2>&1) & "
      "true",
      "bg");
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-bg-0"));
  std::thread typist([] { TypeAtTenKeysASecond(kAgent, 3); });
  ASSERT_TRUE(tmux().WaitForText(kAgent, kGuardPromptTitle, kDecisionWait));
  typist.join();
  // Typing stopped: nothing was decided, nothing ran on the host.
  ASSERT_TRUE(ap::KeysCount(tmux(), kAgent));
  const std::string pane = Screen(kAgent);
  EXPECT_THAT(pane, HasSubstr(kGuardPromptTitle));
  EXPECT_THAT(pane, HasSubstr("1 pending"));
  EXPECT_THAT(pane, Not(HasSubstr("then Enter to"))) << pane;
  EXPECT_THAT(pane, Not(HasSubstr(": reason (optional)"))) << pane;
  EXPECT_THAT(pane, Not(HasSubstr(": Enter checks the command"))) << pane;
  EXPECT_EQ(ap::PendingRequests(id()), 1);
  EXPECT_FALSE(OnHost("typed-marker"));
  absl::StatusOr<std::vector<AuditRecord>> audit = Audit(id());
  ASSERT_TRUE(audit.ok()) << audit.status();
  EXPECT_TRUE(WithArgv(*audit, {"touch", "typed-marker"}).empty());
  // Now deliberately: deny.
  ASSERT_TRUE(tmux().Keys(kAgent, {"d"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, ": reason (optional)"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForTextGone(kAgent, kGuardPromptTitle, kDecisionWait));
  std::vector<AuditRecord> a = Records(id(), {"touch", "typed-marker"});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(DecisionName(a[0]), "DECISION_DENIED");
  EXPECT_FALSE(OnHost("typed-marker"));
  // The shell gets a clean line again.
  Agent({"C-c"});
}

TEST_F(ApproveE2eTest, TypingIntoTheApproverAsARequestArrivesNeverDecides) {
  Approver("appr", id(), 1);
  std::thread typist([] { TypeAtTenKeysASecond("appr", 3); });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  AgentRuns("/run/lazaret/escalate --justify typed -- touch typed-remote-marker", "remote");
  ASSERT_TRUE(tmux().WaitForText("appr", "1 pending", kDecisionWait));
  typist.join();
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  const std::string pane = Screen("appr");
  EXPECT_THAT(pane, HasSubstr("Enter details  a approve")) << pane;
  EXPECT_THAT(pane, Not(HasSubstr("then Enter to"))) << pane;
  EXPECT_EQ(ap::PendingRequests(id()), 1);
  EXPECT_FALSE(OnHost("typed-remote-marker"));
  ASSERT_TRUE(tmux().Keys("appr", {"d"}));
  ASSERT_TRUE(tmux().WaitForText("appr", ": reason (optional)"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-remote-240", kDecisionWait));
  EXPECT_FALSE(OnHost("typed-remote-marker"));
}

TEST_F(ApproveE2eTest, ARequestResolvedWhileItsDetailIsOpenKeepsTheViewAndTakesNoDecision) {
  Approver("appr", id(), 1);
  AgentRuns(
      "/run/lazaret/escalate --justify first -- printf first-one & sleep 1; "
      "/run/lazaret/escalate --justify second -- touch second-marker; wait",
      "two");
  ASSERT_TRUE(tmux().WaitForText("appr", "2 pending", kDecisionWait));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "[1] first-one"));
  // A script decides the request in view.
  CommandResult script =
      RunAs("/", {test::Binary("lazaret-test-approver"), "--socket=" + BrokerSocket(), "decide",
                  "--session=" + id(), "--argv0=printf", "--deny=decided by a script", "--count=1",
                  "--timeout=20"});
  ASSERT_EQ(script.exit_code, 0) << script.out << script.err;
  ASSERT_TRUE(tmux().WaitForText("appr", "no longer pending: denied by")) << Screen("appr");
  EXPECT_THAT(Screen("appr"), HasSubstr("[1] first-one"));
  EXPECT_THAT(Screen("appr"), Not(HasSubstr("second-marker")));
  // Keys that decide find nothing here; the other request stays pending.
  ASSERT_TRUE(tmux().Keys("appr", {"a"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "is no longer pending (denied by"));
  for (const char* k : {"4", "8", "2", "1", "Enter", "e", "Enter", "d", "Enter"}) {
    ASSERT_TRUE(tmux().Keys("appr", {k}));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_THAT(Screen("appr"), HasSubstr("[1] first-one"));
  EXPECT_EQ(ap::PendingRequests(id()), 1);
  EXPECT_FALSE(OnHost("second-marker"));
  // Back to the list only when asked; then deny the other one.
  ASSERT_TRUE(tmux().Keys("appr", {"Escape"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "touch second-marker"));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  ASSERT_TRUE(tmux().Keys("appr", {"d"}));
  ASSERT_TRUE(tmux().WaitForText("appr", ": reason (optional)"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-two-", kDecisionWait));
  EXPECT_FALSE(OnHost("second-marker"));
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
