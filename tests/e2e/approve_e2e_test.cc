// `lazaret approve` end to end, as a person uses it: one tmux window is the
// agent (a real `lazaret run` of a real runsc sandbox, its shell running
// the real /run/lazaret/escalate), the others run the real `lazaret
// approve` against the real lazaret-brokerd. Keys are typed with
// send-keys, screens read with capture-pane, and each case ends by judging
// the host: the audit log, podman, files in the workspace. Every case
// starts the approver first and waits until the broker counts it, so the
// request always finds a terminal approver attached. The same binary runs
// rootful and rootless (LAZARET_E2E_MODE). Runs as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "tests/e2e/approve_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ApproveE2eEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (shared != nullptr) {
      shared->tmux.Keys(kAgent, {"exit", "Enter"});
      EXPECT_TRUE(shared->tmux.WaitForExit(kAgent, std::chrono::seconds(60)));
      delete shared;
      shared = nullptr;
    }
    EscWorld::Destroy();
    EXPECT_TRUE(test::WaitFor([] { return SessionContainers().empty(); }, std::chrono::seconds(60)))
        << "containers left behind";
  }
};
::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ApproveE2eEnvironment);

TEST_F(ApproveE2eTest, ApproveShowsTheRequestRunsItAndTheAgentGetsTheHostsOutput) {
  Approver("appr", id(), 1);
  AgentRuns("/run/lazaret/escalate --justify 'need the host uid' -c id", "approve");
  ASSERT_TRUE(tmux().WaitForText("appr", "1 pending", kDecisionWait));
  ASSERT_TRUE(tmux().WaitForText("appr", "  esc  id "));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "binary     /usr/bin/id"));
  const std::string detail = Screen("appr");
  EXPECT_THAT(detail, HasSubstr("profile    esc"));
  EXPECT_THAT(detail, HasSubstr("session    " + id()));
  EXPECT_THAT(detail, HasSubstr("why        need the host uid"));
  EXPECT_THAT(detail, HasSubstr("command    id"));
  EXPECT_THAT(detail, HasSubstr("argv       [0] id"));
  EXPECT_THAT(detail, HasSubstr("not auto   "));
  // a alone runs nothing: it asks for the code.
  ASSERT_TRUE(tmux().Keys("appr", {"a"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "then Enter to approve"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(ap::PendingRequests(id()), 1);
  ASSERT_TRUE(ap::TypeShownCode(tmux(), "appr"));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-approve-0", kDecisionWait));
  EXPECT_THAT(Screen(kAgent), HasSubstr(Trim(HostId())));
  EXPECT_TRUE(tmux().WaitForText("appr", "ran /usr/bin/id"));

  std::vector<AuditRecord> a = Records(id(), {"id"});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(DecisionName(a[0]), "DECISION_APPROVED");
  EXPECT_TRUE(a[0].ran());
  EXPECT_EQ(a[0].exit_code(), 0);
  EXPECT_EQ(a[0].command(), "id");
  EXPECT_EQ(a[0].justification(), "need the host uid");
  EXPECT_EQ(a[0].approver().name(), "lazaret approve");
  EXPECT_EQ(a[0].approver().kind(), ::lazaret::approver::v1::Approver::KIND_TERMINAL);
  // The broker's id names the request; the agent's is data in the detail.
  EXPECT_THAT(detail, HasSubstr("request    q"));
  EXPECT_THAT(detail, HasSubstr("agent id   " + a[0].request_id()));
  EXPECT_THAT(detail, HasSubstr("workspace  " + a[0].workspace()));
  EXPECT_THAT(detail, HasSubstr("not auto   " + a[0].reason().substr(0, 20)));
}

TEST_F(ApproveE2eTest, DenyWithAReasonReachesTheAgentAndTheAudit) {
  Approver("appr", id(), 1);
  AgentRuns("/run/lazaret/escalate --justify 'mark it' -- touch deny-marker", "deny");
  ASSERT_TRUE(tmux().WaitForText("appr", "  esc  touch deny-marker", kDecisionWait));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  ASSERT_TRUE(tmux().Keys("appr", {"d"}));
  ASSERT_TRUE(tmux().WaitForText("appr", ": reason (optional)"));
  ASSERT_TRUE(tmux().Literal("appr", "not on my host"));
  ASSERT_TRUE(tmux().WaitForText("appr", "> not on my host"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-deny-240", kDecisionWait));
  EXPECT_THAT(Screen(kAgent), HasSubstr("not on my host"));
  EXPECT_TRUE(tmux().WaitForText("appr", "denied "));

  std::vector<AuditRecord> a = Records(id(), {"touch", "deny-marker"});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(DecisionName(a[0]), "DECISION_DENIED");
  EXPECT_EQ(a[0].reason(), "not on my host");
  EXPECT_FALSE(a[0].ran());
  struct stat st;
  EXPECT_NE(stat((shared->workspace.path() + "/deny-marker").c_str(), &st), 0);
}

TEST_F(ApproveE2eTest, EditRunsTheEditedArgvOnlyWithTheCode) {
  Approver("appr", id(), 1);
  AgentRuns("/run/lazaret/escalate --justify 'say one' -c 'echo one'", "edit");
  ASSERT_TRUE(tmux().WaitForText("appr", "  esc  echo one", kDecisionWait));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  ASSERT_TRUE(tmux().Keys("appr", {"e"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "> echo one"));
  // A word back, the rest of the line killed, then the new word.
  ASSERT_TRUE(tmux().Keys("appr", {"C-Left"}));
  ASSERT_TRUE(tmux().Keys("appr", {"C-k"}));
  ASSERT_TRUE(tmux().Literal("appr", "tw"));
  ASSERT_TRUE(tmux().Keys("appr", {"Home", "End"}));
  ASSERT_TRUE(tmux().Literal("appr", "o"));
  ASSERT_TRUE(tmux().WaitForText("appr", "> echo two"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "Run the edited command for q"));
  EXPECT_THAT(Screen("appr"), HasSubstr("[0] echo"));
  EXPECT_THAT(Screen("appr"), HasSubstr("[1] two"));
  // y, the old confirmation, runs nothing.
  ASSERT_TRUE(tmux().Keys("appr", {"y"}));
  ASSERT_TRUE(tmux().WaitForText("appr", ": Enter checks the command"));
  EXPECT_EQ(ap::PendingRequests(id()), 1);
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(ap::TypeShownCode(tmux(), "appr", "then Enter to run it"));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-edit-0", kDecisionWait));
  EXPECT_TRUE(ap::HasRow(Screen(kAgent), "two")) << Screen(kAgent);
  EXPECT_FALSE(ap::HasRow(Screen(kAgent), "one")) << Screen(kAgent);

  std::vector<AuditRecord> a = Records(id(), {"echo", "one"});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(DecisionName(a[0]), "DECISION_EDITED");
  EXPECT_THAT(a[0].ran_argv(), ::testing::ElementsAre("echo", "two"));
  EXPECT_TRUE(a[0].ran());
}

TEST_F(ApproveE2eTest, HostileTextIsEscapedMarkedAndLeavesTheApproversPaneAlone) {
  const std::string justification = "\x1b[31mred\x1b[0m";
  const std::string command =
      "echo \x1b[2J\x1b]2;pwned\x07\xE2\x80\xAEtxt\xE2\x80\x8B"
      "end";
  shared->workspace.Write("hostile.sh", "/run/lazaret/escalate --justify '" + justification +
                                            "' -c '" + command + "'\n");
  Approver("appr", id(), 1);
  const std::string title = tmux().Format("appr", "#{pane_title}");
  const std::string alternate = tmux().Format("appr", "#{alternate_on}");
  AgentRuns("sh hostile.sh", "hostile");
  // The row is marked: the command holds hidden characters.
  ASSERT_TRUE(tmux().WaitForText("appr", "! esc  echo \\x1b[2J", kDecisionWait));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(
      "appr", "command    echo \\x1b[2J\\x1b]2;pwned\\x07\\u{202E}txt\\u{200B}end"));
  const std::string plain = Screen("appr");
  EXPECT_THAT(plain, HasSubstr("why        \\x1b[31mred\\x1b[0m"));
  EXPECT_THAT(plain, HasSubstr("lazaret approve  1 pending"));  // \e[2J cleared nothing
  const std::string esc = Screen("appr", true);
  EXPECT_TRUE(test::MarkedInCapture(esc, "\\u{202E}")) << esc;
  EXPECT_TRUE(test::MarkedInCapture(esc, "\\u{200B}")) << esc;
  EXPECT_TRUE(test::MarkedInCapture(esc, "\\x1b")) << esc;
  EXPECT_TRUE(test::MarkedInCapture(esc, "\\x07")) << esc;
  EXPECT_FALSE(test::MarkedInCapture(esc, "txt")) << esc;
  EXPECT_FALSE(test::MarkedInCapture(esc, "pwned")) << esc;
  // No red from the justification anywhere.
  EXPECT_THAT(esc, Not(HasSubstr("\x1b[31m"))) << esc;
  EXPECT_THAT(esc, Not(HasSubstr(";31m"))) << esc;
  EXPECT_EQ(tmux().Format("appr", "#{pane_title}"), title);
  EXPECT_NE(tmux().Format("appr", "#{pane_title}"), "pwned");
  EXPECT_EQ(tmux().Format("appr", "#{alternate_on}"), alternate);

  ASSERT_TRUE(tmux().Keys("appr", {"d"}));
  ASSERT_TRUE(tmux().WaitForText("appr", ": reason (optional)"));
  ASSERT_TRUE(tmux().Literal("appr", "hostile"));
  ASSERT_TRUE(tmux().Keys("appr", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-hostile-240", kDecisionWait));
  absl::StatusOr<std::vector<AuditRecord>> all = Audit(id());
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<AuditRecord> a;
  for (const AuditRecord& r : *all) {
    if (r.command() == command) a.push_back(r);
  }
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].justification(), justification);
  EXPECT_EQ(DecisionName(a[0]), "DECISION_DENIED");
  EXPECT_FALSE(a[0].ran());
}

TEST_F(ApproveE2eTest, TwoApproversRacingRunTheCommandOnce) {
  Approver("appr-a", id(), 1);
  Approver("appr-b", id(), 2);
  AgentRuns("/run/lazaret/escalate --justify 'count me' -- sh -c 'echo ran >> race.count'", "race");
  ASSERT_TRUE(tmux().WaitForText("appr-a", "  esc  sh -c ", kDecisionWait));
  ASSERT_TRUE(tmux().WaitForText("appr-b", "  esc  sh -c ", kDecisionWait));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr-a"));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr-b"));
  // Both open the confirmation and type their codes; the Enters race.
  ASSERT_TRUE(tmux().KeysToAll({"appr-a", "appr-b"}, {"a"}));
  for (const char* w : {"appr-a", "appr-b"}) {
    ASSERT_TRUE(tmux().WaitForText(w, "then Enter to approve"));
    const std::string code = ap::ShownCode(Screen(w));
    ASSERT_EQ(code.size(), 4u) << Screen(w);
    ASSERT_TRUE(tmux().Literal(w, code));
    ASSERT_TRUE(tmux().WaitForText(w, "code: " + code));
  }
  ASSERT_TRUE(tmux().KeysToAll({"appr-a", "appr-b"}, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-race-0", kDecisionWait));
  ASSERT_TRUE(tmux().WaitForTextGone("appr-a", "1 pending"));
  ASSERT_TRUE(tmux().WaitForTextGone("appr-b", "1 pending"));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // a second run would show by now
  const std::string a = Screen("appr-a"), b = Screen("appr-b");
  // The winner's notice: "approved ID: ran BINARY" (sh resolves to its target).
  const auto won = [](const std::string& s) {
    return absl::StrContains(s, "approved ") && absl::StrContains(s, ": ran /");
  };
  const auto lost = [](const std::string& s) {
    return absl::StrContains(s, "decided elsewhere") || absl::StrContains(s, "is not pending");
  };
  EXPECT_TRUE((won(a) && lost(b)) || (won(b) && lost(a))) << a << "\n----\n" << b;
  EXPECT_EQ(test::ReadFile(shared->workspace.path() + "/race.count"), "ran\n");
  std::vector<AuditRecord> r = Records(id(), {"sh", "-c", "echo ran >> race.count"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(DecisionName(r[0]), "DECISION_APPROVED");
  EXPECT_TRUE(r[0].ran());
}

// Last: it ends a session (of its own).
TEST_F(ApproveE2eTest, AbortStopsTheSessionAndDeniesWhatWaits) {
  UserDir ws("apprws-abort");
  absl::StatusOr<std::string> own =
      ap::StartAgent(tmux(), "agent2", ws.path(), W().config(), kProfile);
  ASSERT_TRUE(own.ok()) << own.status();
  windows_.push_back("agent2");
  Approver("appr", *own, 1);
  ASSERT_TRUE(tmux().Literal("agent2",
                             "/run/lazaret/escalate --justify first -- echo p1 & "
                             "/run/lazaret/escalate --justify second -- echo p2; wait"));
  ASSERT_TRUE(tmux().Keys("agent2", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "2 pending", kDecisionWait));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr"));
  ASSERT_TRUE(tmux().Keys("appr", {"Q"}));
  ASSERT_TRUE(tmux().WaitForText("appr", "stop its sandbox? (y/n)"));
  ASSERT_TRUE(tmux().Keys("appr", {"y"}));
  ASSERT_TRUE(tmux().WaitForExit("agent2", std::chrono::seconds(60)));
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return Trim(Podman({"ps", "--all", "--format", "{{.Names}}", "--filter",
                            "label=io.lazaret.session=" + *own})
                        .out)
            .empty();
      },
      std::chrono::seconds(60)))
      << "containers of the aborted session are left";
  std::vector<AuditRecord> p1 = Records(*own, {"echo", "p1"});
  std::vector<AuditRecord> p2 = Records(*own, {"echo", "p2"});
  ASSERT_EQ(p1.size(), 1u);
  ASSERT_EQ(p2.size(), 1u);
  for (const AuditRecord& r : {p1[0], p2[0]}) {
    EXPECT_FALSE(r.ran());
    EXPECT_THAT(DecisionName(r), ::testing::AnyOf("DECISION_ABORTED", "DECISION_DENIED"));
  }
  EXPECT_TRUE(DecisionName(p1[0]) == "DECISION_ABORTED" ||
              DecisionName(p2[0]) == "DECISION_ABORTED");
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
