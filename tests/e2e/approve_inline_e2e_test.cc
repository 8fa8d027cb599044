// The inline approver of `lazaret run` end to end, as a person meets it: the
// agent's `lazaret run` shell in a tmux window asks the host for a command
// through the real /run/lazaret/escalate, and with no `lazaret approve`
// attached the prompt appears in that same window; keys typed there decide.
// Each case judges the screen before and after (restored exactly), the
// host (audit log, files, podman) and that keys reach the agent whenever no
// prompt shows. Shares the fixture, the agent session and the binary with
// approve_e2e_test.cc. Runs as root, rootful and rootless. The case of
// names asked for (egress = "ask", escalation off) runs against the network
// world of the net e2e tests (net_e2e_world.h): its test DNS server is the
// upstream, its test hosts answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/e2e/approve_e2e_fixture.h"
#include "tests/e2e/net_e2e_hosts.h"
#include "tests/e2e/net_e2e_world.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPromptTitle[] = "lazaret run: the sandbox asks the host";

// The network world is built only by the case that needs it, and torn down
// (test hosts, the user's configuration file back) at the end.
class NetWorldEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { net::NetWorld::Destroy(); }
};
::testing::Environment* const kNetEnvironment =
    ::testing::AddGlobalTestEnvironment(new NetWorldEnvironment);

class InlineE2eTest : public ApproveE2eTest {
 protected:
  static std::string Alternate(const std::string& window = kAgent) {
    return tmux().Format(window, "#{alternate_on}");
  }
  // The agent's screen without the trailing blank rows and blanks.
  static std::string Rows(const std::string& window = kAgent) {
    std::vector<std::string> rows;
    for (absl::string_view r : absl::StrSplit(Screen(window), '\n')) {
      rows.emplace_back(absl::StripTrailingAsciiWhitespace(r));
    }
    while (!rows.empty() && rows.back().empty()) rows.pop_back();
    std::string out;
    for (const std::string& r : rows) absl::StrAppend(&out, r, "\n");
    return out;
  }
  // Waits until the prompt shows in `window`, on the alternate screen.
  static ::testing::AssertionResult PromptShows(const std::string& window = kAgent) {
    ::testing::AssertionResult shown = tmux().WaitForText(window, kPromptTitle, kDecisionWait);
    if (!shown) return shown;
    if (Alternate(window) != "1") {
      return ::testing::AssertionFailure() << "the prompt is not on the alternate screen";
    }
    return ::testing::AssertionSuccess();
  }
  // Waits until the screen is `rows` again.
  static std::string WithoutLastRow(const std::string& rows) {
    const size_t end = rows.rfind('\n', rows.size() >= 2 ? rows.size() - 2 : 0);
    return end == std::string::npos ? "" : rows.substr(0, end + 1);
  }
  static ::testing::AssertionResult ScreenBecomes(const std::string& rows,
                                                  bool ignore_last_row = false,
                                                  const std::string& window = kAgent) {
    std::string now;
    if (test::WaitFor(
            [&] {
              now = ignore_last_row ? WithoutLastRow(Rows(window)) : Rows(window);
              return now == rows;
            },
            std::chrono::seconds(15))) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "the screen is\n" << now << "----\nnot\n" << rows;
  }
};

TEST_F(InlineE2eTest, ApprovedInlineTheScreenComesBackAndTheAgentGetsTheOutput) {
  AgentRuns("echo before-the-request", "before");
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-before-0"));
  AgentRuns("/run/lazaret/escalate --justify 'the host uid' -c id", "inline");
  ASSERT_TRUE(PromptShows());
  ASSERT_TRUE(tmux().WaitForText(kAgent, "1 pending"));
  ASSERT_TRUE(ap::KeysCount(tmux(), kAgent));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "binary     /usr/bin/id"));
  EXPECT_THAT(Screen(kAgent), HasSubstr("why        the host uid"));
  EXPECT_THAT(Screen(kAgent), HasSubstr("session    " + id()));
  ASSERT_TRUE(tmux().Keys(kAgent, {"a"}));
  ASSERT_TRUE(ap::TypeShownCode(tmux(), kAgent));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-inline-0", kDecisionWait));
  EXPECT_EQ(Alternate(), "0");
  const std::string screen = Screen(kAgent);
  EXPECT_THAT(screen, HasSubstr("before-the-request"));
  EXPECT_THAT(screen, HasSubstr(Trim(HostId())));
  EXPECT_THAT(screen, Not(HasSubstr(kPromptTitle)));

  std::vector<AuditRecord> a = Records(id(), {"id"});
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(DecisionName(a.back()), "DECISION_APPROVED");
  EXPECT_EQ(a.back().approver().kind(), ::lazaret::approver::v1::Approver::KIND_INLINE);
  EXPECT_EQ(a.back().approver().name(), "lazaret run (inline)");
}

TEST_F(InlineE2eTest, DenyWithAReasonAndEditInline) {
  AgentRuns("/run/lazaret/escalate --justify 'mark it' -- touch inline-deny", "deny");
  ASSERT_TRUE(PromptShows());
  ASSERT_TRUE(ap::KeysCount(tmux(), kAgent));
  ASSERT_TRUE(tmux().Keys(kAgent, {"d"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, ": reason (optional)"));
  ASSERT_TRUE(tmux().Literal(kAgent, "not inline either"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-deny-240", kDecisionWait));
  EXPECT_THAT(Screen(kAgent), HasSubstr("not inline either"));
  EXPECT_EQ(Alternate(), "0");
  std::vector<AuditRecord> d = Records(id(), {"touch", "inline-deny"});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(DecisionName(d[0]), "DECISION_DENIED");
  EXPECT_EQ(d[0].reason(), "not inline either");

  AgentRuns("clear; /run/lazaret/escalate --justify 'say uno' -c 'echo uno'", "edit");
  ASSERT_TRUE(PromptShows());
  ASSERT_TRUE(ap::KeysCount(tmux(), kAgent));
  ASSERT_TRUE(tmux().Keys(kAgent, {"e"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "> echo uno"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"M-b"}));
  ASSERT_TRUE(tmux().Keys(kAgent, {"C-k"}));
  ASSERT_TRUE(tmux().Literal(kAgent, "dos"));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "> echo dos"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "Run the edited command for q"));
  EXPECT_THAT(Screen(kAgent), HasSubstr("[1] dos"));
  ASSERT_TRUE(ap::TypeShownCode(tmux(), kAgent, "then Enter to run it"));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-edit-0", kDecisionWait));
  EXPECT_TRUE(ap::HasRow(Screen(kAgent), "dos")) << Screen(kAgent);
  std::vector<AuditRecord> e = Records(id(), {"echo", "uno"});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(DecisionName(e[0]), "DECISION_EDITED");
  EXPECT_THAT(e[0].ran_argv(), ::testing::ElementsAre("echo", "dos"));
}

TEST_F(InlineE2eTest, HostileTextInlineIsEscapedAndTheTerminalUntouched) {
  shared->workspace.Write("inline-hostile.sh",
                          "/run/lazaret/escalate --justify 'x' -c "
                          "'echo \x1b]2;pwned\x07\x1b[?1049l\xE2\x80\xAEtxt\xE2\x80\x8B"
                          "end'\n");
  const std::string title = tmux().Format(kAgent, "#{pane_title}");
  AgentRuns("sh inline-hostile.sh", "hostile");
  ASSERT_TRUE(PromptShows());
  ASSERT_TRUE(ap::KeysCount(tmux(), kAgent));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(
      kAgent, "command    echo \\x1b]2;pwned\\x07\\x1b[?1049l\\u{202E}txt\\u{200B}end"));
  // The ESC [?1049l in the text did not leave the prompt's screen.
  EXPECT_EQ(Alternate(), "1");
  EXPECT_TRUE(test::MarkedInCapture(Screen(kAgent, true), "\\u{202E}"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"d"}));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-hostile-240", kDecisionWait));
  EXPECT_EQ(tmux().Format(kAgent, "#{pane_title}"), title);
}

TEST_F(InlineE2eTest, ThePromptOverLessGivesLessItsScreenBack) {
  AgentRuns("echo before-less", "mark");
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-mark-0"));
  const std::string before_less = Rows();
  // The request comes while less shows a file; its answer goes to a file.
  ASSERT_TRUE(tmux().Literal(kAgent,
                             "(sleep 4; /run/lazaret/escalate --justify bg -c 'echo from-the-host' "
                             "> bg.out 2>&1) & less /etc/services"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "Network services, Internet style"));
  ASSERT_EQ(Alternate(), "1");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string less_screen = Rows();
  ASSERT_TRUE(tmux().WaitForText(kAgent, kPromptTitle, kDecisionWait));
  ASSERT_TRUE(ap::ApproveSelected(tmux(), kAgent));
  ASSERT_TRUE(tmux().WaitForTextGone(kAgent, kPromptTitle));
  // less drew its screen again, exactly as it was (the last row is less's
  // own prompt: the file name at first, ':' after any repaint).
  EXPECT_TRUE(ScreenBecomes(WithoutLastRow(less_screen), /*ignore_last_row=*/true));
  EXPECT_EQ(Alternate(), "1");
  // Keys reach less again: down one line, then q.
  ASSERT_TRUE(tmux().Keys(kAgent, {"j"}));
  EXPECT_TRUE(test::WaitFor([&] { return Rows() != less_screen; }, std::chrono::seconds(5)));
  ASSERT_TRUE(tmux().Keys(kAgent, {"q"}));
  EXPECT_TRUE(test::WaitFor([] { return Alternate() == "0"; }, std::chrono::seconds(5)));
  // The main screen is the one from before less.
  EXPECT_THAT(Rows(), HasSubstr(absl::StripTrailingAsciiWhitespace(before_less)));
  AgentRuns("cat bg.out", "bg");
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-bg-0"));
  EXPECT_TRUE(ap::HasRow(Screen(kAgent), "from-the-host")) << Screen(kAgent);
}

TEST_F(InlineE2eTest, CtrlCAndCtrlZReachTheAgentNotLazaret) {
  // An interactive shell drops the rest of a line whose command died of
  // SIGINT: the status is asked for on a line of its own.
  ASSERT_TRUE(tmux().Literal(kAgent, "sleep 100"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(tmux().Keys(kAgent, {"C-c"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "^C"));
  ASSERT_TRUE(tmux().Literal(kAgent, "echo INT-$?"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "INT-130"));
  ASSERT_TRUE(tmux().Literal(kAgent, "sleep 100"));
  ASSERT_TRUE(tmux().Keys(kAgent, {"Enter"}));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(tmux().Keys(kAgent, {"C-z"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "Stopped"));
  AgentRuns("jobs -l | grep -c sleep; kill -9 %1", "jobs");
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-jobs-0"));
  EXPECT_FALSE(tmux().PaneDead(kAgent));
  EXPECT_FALSE(SessionContainers().empty());
}

TEST_F(InlineE2eTest, AnAttachedApproverKeepsThePromptAwayAndARemoteDecisionClosesIt) {
  // 1. lazaret approve attached when the request comes: no inline prompt.
  Approver("appr", id(), 1);
  AgentRuns("/run/lazaret/escalate --justify remote -c 'echo remote-one'", "remote");
  ASSERT_TRUE(tmux().WaitForText("appr", "1 pending", kDecisionWait));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_THAT(Screen(kAgent), Not(HasSubstr(kPromptTitle)));
  EXPECT_EQ(Alternate(), "0");
  ASSERT_TRUE(ap::ApproveSelected(tmux(), "appr"));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-remote-0", kDecisionWait));
  tmux().Tmux({"kill-session", "-t", "=appr"});
  windows_.clear();
  ASSERT_TRUE(
      test::WaitFor([] { return ap::TerminalApprovers(id()) == 0; }, std::chrono::seconds(10)));

  // 2. No approver when it comes: the prompt shows inline; then lazaret
  // approve attaches and both press a at once: it runs once, and the
  // prompt closes by itself.
  AgentRuns("clear; /run/lazaret/escalate --justify race -- sh -c 'echo ran >> inline.count'",
            "race");
  ASSERT_TRUE(PromptShows());
  Approver("appr2", id(), 1, "1 pending");
  ASSERT_TRUE(ap::KeysCount(tmux(), kAgent));
  ASSERT_TRUE(ap::KeysCount(tmux(), "appr2"));
  ASSERT_TRUE(tmux().KeysToAll({kAgent, "appr2"}, {"a"}));
  for (const char* w : {kAgent, "appr2"}) {
    ASSERT_TRUE(tmux().WaitForText(w, "then Enter to approve"));
    const std::string code = ap::ShownCode(Screen(w));
    ASSERT_EQ(code.size(), 4u) << Screen(w);
    ASSERT_TRUE(tmux().Literal(w, code));
    ASSERT_TRUE(tmux().WaitForText(w, "code: " + code));
  }
  ASSERT_TRUE(tmux().KeysToAll({kAgent, "appr2"}, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kAgent, "DONE-race-0", kDecisionWait));
  EXPECT_EQ(Alternate(), "0");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(test::ReadFile(shared->workspace.path() + "/inline.count"), "ran\n");
  std::vector<AuditRecord> r = Records(id(), {"sh", "-c", "echo ran >> inline.count"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].ran());
}

TEST_F(InlineE2eTest, RemoteApproverOptionNeverPromptsInline) {
  UserDir ws("apprws-remote");
  absl::StatusOr<std::string> own =
      ap::StartAgent(tmux(), "agent-r", ws.path(), W().config(), kProfile, {"--approver=remote"});
  ASSERT_TRUE(own.ok()) << own.status();
  windows_.push_back("agent-r");
  AgentRuns("/run/lazaret/escalate --justify later -c 'echo decided-remotely'", "r", "agent-r");
  ASSERT_TRUE(test::WaitFor([&] { return ap::PendingRequests(*own) == 1; }, kDecisionWait));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_THAT(Screen("agent-r"), Not(HasSubstr(kPromptTitle)));
  EXPECT_EQ(Alternate("agent-r"), "0");
  Approver("appr", *own, 1, "1 pending");
  ASSERT_TRUE(ap::ApproveSelected(tmux(), "appr"));
  ASSERT_TRUE(tmux().WaitForText("agent-r", "DONE-r-0", kDecisionWait));
  EXPECT_TRUE(ap::HasRow(Screen("agent-r"), "decided-remotely"));
  ASSERT_TRUE(tmux().Keys("agent-r", {"C-d"}));
  EXPECT_TRUE(tmux().WaitForExit("agent-r", std::chrono::seconds(60)));
}

TEST_F(InlineE2eTest, AbortInlineStopsTheSession) {
  UserDir ws("apprws-inline-abort");
  absl::StatusOr<std::string> own =
      ap::StartAgent(tmux(), "agent-a", ws.path(), W().config(), kProfile);
  ASSERT_TRUE(own.ok()) << own.status();
  windows_.push_back("agent-a");
  AgentRuns("/run/lazaret/escalate --justify stop -c 'echo never'", "a", "agent-a");
  ASSERT_TRUE(PromptShows("agent-a"));
  ASSERT_TRUE(ap::KeysCount(tmux(), "agent-a"));
  ASSERT_TRUE(tmux().Keys("agent-a", {"Q"}));
  ASSERT_TRUE(tmux().WaitForText("agent-a", "stop its sandbox? (y/n)"));
  ASSERT_TRUE(tmux().Keys("agent-a", {"y"}));
  ASSERT_TRUE(tmux().WaitForExit("agent-a", std::chrono::seconds(60)));
  EXPECT_EQ(Alternate("agent-a"), "0");
  EXPECT_TRUE(test::WaitFor(
      [&] {
        return Trim(Podman({"ps", "--all", "--format", "{{.Names}}", "--filter",
                            "label=io.lazaret.session=" + *own})
                        .out)
            .empty();
      },
      std::chrono::seconds(60)));
  std::vector<AuditRecord> a = Records(*own, {"echo", "never"});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_FALSE(a[0].ran());
  EXPECT_EQ(DecisionName(a[0]), "DECISION_ABORTED");
}

// egress = "ask" and escalation off: each name the sandbox asks for that no
// list allows is shown in the terminal of `lazaret run`, and keys typed
// there decide it. Once answers only that query; for this session allows it
// until the session ends; for this profile writes the change shown to the
// file shown; deny refuses it for the rest of the session.
TEST_F(InlineE2eTest, InlinePromptAllowsANameOnceSessionProfileAndDenies) {
  net::NetWorld& world = net::NetWorld::Get();
  ASSERT_TRUE(world.error().empty()) << world.error();
  // The profile is the user's own (only the user's file is ever edited "for
  // this profile"); the world's user file, which gets it, is put back when
  // the world is torn down.
  constexpr char kAskProfile[] = "netaskinline";
  const std::string user_file = Env().home + "/.config/lazaret/config.toml";
  const std::string before = test::ReadFile(user_file);
  ASSERT_THAT(before, HasSubstr("dns_upstream"));
  std::ofstream(user_file, std::ios::app)
      << "\n[profiles." << kAskProfile
      << "]\nimage = \"localhost/lazaret-sandbox:trixie\"\negress = \"ask\"\nask_timeout = 60\n";
  // A workspace file may turn escalation off (it narrows): only names ask.
  UserDir ws("apprws-ask");
  ws.Write("lazaret.toml", "[escalation]\nenabled = false\n");
  absl::StatusOr<std::string> own =
      ap::StartAgent(tmux(), "agent-n", ws.path(), world.config(), kAskProfile);
  ASSERT_TRUE(own.ok()) << own.status();
  windows_.push_back("agent-n");
  constexpr char kW[] = "agent-n";
  auto ask = [&](const std::string& name, const std::string& tag) {
    ASSERT_TRUE(tmux().Keys(kW, {"C-l"}));
    AgentRuns("getent ahosts " + name, tag, kW);
  };
  auto prompt_for = [&](const std::string& name) -> ::testing::AssertionResult {
    ::testing::AssertionResult shown = PromptShows(kW);
    if (!shown) return shown;
    shown = tmux().WaitForText(kW, "net  " + name + "  (");
    if (!shown) return shown;
    return ap::KeysCount(tmux(), kW);
  };

  // Once: the answer after the code, and the next query asks again.
  ask(net::kNameSecret, "once");
  ASSERT_TRUE(prompt_for(net::kNameSecret));
  ASSERT_TRUE(tmux().Keys(kW, {"Enter"}));
  ASSERT_TRUE(
      tmux().WaitForText(kW, std::string("addresses  ") + net::kPublicV4 + "  would be allowed"));
  EXPECT_THAT(Screen(kW), HasSubstr("session    " + *own));
  EXPECT_THAT(Screen(kW), HasSubstr(std::string("profile    ") + kAskProfile));
  ASSERT_TRUE(tmux().Keys(kW, {"o"}));
  ASSERT_TRUE(ap::TypeShownCode(tmux(), kW, "then Enter to allow"));
  ASSERT_TRUE(tmux().WaitForText(kW, "DONE-once-0", kDecisionWait));
  EXPECT_EQ(Alternate(kW), "0");
  EXPECT_THAT(Screen(kW), HasSubstr(net::kPublicV4));
  ask(net::kNameSecret, "again");
  ASSERT_TRUE(prompt_for(net::kNameSecret));
  // Deny: refused, and not asked again in this session.
  ASSERT_TRUE(tmux().Keys(kW, {"d"}));
  ASSERT_TRUE(tmux().WaitForText(kW, ": reason (optional)"));
  ASSERT_TRUE(tmux().Keys(kW, {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText(kW, "DONE-again-2", kDecisionWait));
  EXPECT_THAT(Screen(kW), Not(HasSubstr(net::kPublicV4)));
  ask(net::kNameSecret, "denied");
  ASSERT_TRUE(tmux().WaitForText(kW, "DONE-denied-2", kDecisionWait));
  EXPECT_EQ(Alternate(kW), "0");

  // For this session: allowed, and the next query is not asked.
  ask(net::kNameLate, "session");
  ASSERT_TRUE(prompt_for(net::kNameLate));
  ASSERT_TRUE(tmux().Keys(kW, {"s"}));
  ASSERT_TRUE(ap::TypeShownCode(tmux(), kW, "then Enter to allow"));
  ASSERT_TRUE(tmux().WaitForText(kW, "DONE-session-0", kDecisionWait));
  ask(net::kNameLate, "session2");
  ASSERT_TRUE(tmux().WaitForText(kW, "DONE-session2-0", kDecisionWait));
  EXPECT_THAT(Screen(kW), Not(HasSubstr(kPromptTitle)));

  // For this profile: the file and the change first, then the code; the
  // file then holds the name.
  ask(net::kNameFree, "profile");
  ASSERT_TRUE(prompt_for(net::kNameFree));
  ASSERT_TRUE(tmux().Keys(kW, {"p"}));
  ASSERT_TRUE(tmux().WaitForText(kW, "Enter shows the code"));
  const std::string change = Screen(kW);
  EXPECT_THAT(change, Not(HasSubstr("Type ")));
  EXPECT_THAT(change, HasSubstr(net::kNameFree));
  std::string file;
  for (absl::string_view row : absl::StrSplit(change, '\n')) {
    if (absl::ConsumePrefix(&row, "file       ")) {
      file = std::string(absl::StripTrailingAsciiWhitespace(row));
    }
  }
  EXPECT_EQ(file, user_file);
  const std::string shown = test::ReadFile(user_file);
  EXPECT_THAT(shown, Not(HasSubstr(net::kNameFree)));
  ASSERT_TRUE(tmux().Keys(kW, {"Enter"}));
  ASSERT_TRUE(ap::TypeShownCode(tmux(), kW, "then Enter to allow"));
  ASSERT_TRUE(tmux().WaitForText(kW, "DONE-profile-0", kDecisionWait));
  // The one line shown is the only change to the file.
  const std::string line = absl::StrCat("allow_domains = [\"", net::kNameFree, "\"]");
  EXPECT_THAT(change, HasSubstr("+" + line));
  const std::string after = test::ReadFile(user_file);
  EXPECT_EQ(absl::StrReplaceAll(after, {{line + "\n", ""}}), shown) << after;

  // The audit names each decision and the inline approver.
  absl::StatusOr<std::vector<AuditRecord>> audit = Audit(*own);
  ASSERT_TRUE(audit.ok()) << audit.status();
  std::vector<std::string> seen;
  for (const AuditRecord& r : *audit) {
    if (r.network_name().empty()) continue;
    seen.push_back(r.network_name() + " " + DecisionName(r));
    if (DecisionName(r) == "DECISION_NAME_ALLOWED") {
      EXPECT_EQ(r.approver().kind(), ::lazaret::approver::v1::Approver::KIND_INLINE);
    }
  }
  EXPECT_THAT(seen,
              ::testing::IsSupersetOf({std::string(net::kNameSecret) + " DECISION_NAME_ALLOWED",
                                       std::string(net::kNameSecret) + " DECISION_DENIED",
                                       std::string(net::kNameLate) + " DECISION_NAME_ALLOWED",
                                       std::string(net::kNameFree) + " DECISION_NAME_ALLOWED"}));
  ASSERT_TRUE(tmux().Keys(kW, {"C-d"}));
  EXPECT_TRUE(tmux().WaitForExit(kW, std::chrono::seconds(60)));
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
