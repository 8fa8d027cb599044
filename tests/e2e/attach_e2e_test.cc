// Sessions that outlive a terminal, end to end, as a person meets them:
// `lazaret run` of the agent's shell in one tmux window, Ctrl-\ d detaches
// it, `lazaret ps` shows it detached, `lazaret attach` picks it up from
// another window of another size (the agent sees the new size) and keys
// typed there reach it; kill -9 of the attached CLI leaves the agent
// running; an inline approval is answered in the re-attached terminal;
// `lazaret stop` from elsewhere ends it cleanly; and kill -9 of
// lazaret-sessiond ends its sessions with their write-back (the agent's
// commit is on the host's agent branch). Part of the approve e2e binary:
// it shares its world (the escalation profile, brokerd's audit); its
// sessions and tmux server are its own, and its suite runs after the
// approve suites (registration order), since killing sessiond ends every
// session of the mode. Runs as root, rootful and rootless.
#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "tests/e2e/approve_e2e_fixture.h"

namespace lazaret::test::e2e::esc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAttachPromptTitle[] = "lazaret run: the sandbox asks the host";
constexpr auto kEndWait = std::chrono::seconds(90);

// A tmux server of its own (the approve suites' shared agent is not used:
// the last case ends every session of the mode).
struct AttachShared {
  test::TempDir dir{"laz-attach-e2e"};
  test::TmuxSession tmux{dir.path()};
};
AttachShared* attach_shared = nullptr;

class AttachE2eTest : public EscE2eTest {
 protected:
  void SetUp() override {
    EscE2eTest::SetUp();
    if (HasFatalFailure()) return;
    if (!test::TmuxSession::Available()) GTEST_SKIP() << "tmux is not installed";
    if (attach_shared == nullptr) attach_shared = new AttachShared();
  }
  void TearDown() override {
    for (const std::string& w : windows_) tmux().Tmux({"kill-session", "-t", "=" + w});
  }

  static test::TmuxSession& tmux() { return attach_shared->tmux; }
  // Types a command line into the agent's shell in `window`;
  // DONE-<tag>-<status> follows its output.
  static void AgentRuns(const std::string& line, const std::string& tag,
                        const std::string& window) {
    ASSERT_TRUE(tmux().Literal(window, line + "; echo DONE-" + tag + "-$?"));
    ASSERT_TRUE(tmux().Keys(window, {"Enter"}));
  }
  // The audit records of `session` with this argv, once there is one.
  static std::vector<AuditRecord> Records(const std::string& session, const Strings& argv) {
    std::vector<AuditRecord> out;
    test::WaitFor(
        [&] {
          absl::StatusOr<std::vector<AuditRecord>> all = Audit(session);
          out = all.ok() ? WithArgv(*all, argv) : std::vector<AuditRecord>{};
          return !out.empty();
        },
        std::chrono::seconds(10));
    return out;
  }

  // A window running `lazaret ARGS` as the mode's user.
  void OpenLazaret(const std::string& window, int width, int height,
                   const std::vector<std::string>& args) {
    std::vector<std::string> argv = {test::Binary("lazaret")};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string line = absl::StrCat(
        "cd / && exec ",
        ap::ShellLine(AsMode(argv, {{"TERM", "xterm-256color"}, {"LANG", "C.UTF-8"}})));
    windows_.push_back(window);
    ASSERT_TRUE(tmux().NewWindow(window, width, height, line));
  }
  // Starts the agent's shell in `window` with `lazaret run`; its session id.
  std::string StartRun(const std::string& window, const std::string& workspace) {
    windows_.push_back(window);
    absl::StatusOr<std::string> id =
        ap::StartAgent(tmux(), window, workspace, W().config(), kProfile);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : "";
  }
  // Ctrl-\ then d, as bytes.
  static bool Detach(const std::string& window) {
    return tmux().Tmux({"send-keys", "-t", "=" + window + ":", "-H", "1c", "64"}).exit_code == 0;
  }
  static std::string PsLine(const std::string& id) {
    CommandResult ps = Lazaret("/", {"ps"});
    for (absl::string_view l : absl::StrSplit(ps.out, '\n')) {
      if (absl::StartsWith(l, id)) return std::string(l);
    }
    return "";
  }
  static pid_t PanePid(const std::string& window) {
    return static_cast<pid_t>(std::atoi(tmux().Format(window, "#{pane_pid}").c_str()));
  }
  static pid_t SessiondPid() {
    CommandResult st = Lazaret("/", {"status", "--json"});
    ::lazaret::supervisor::v1::GetStatusResponse resp;
    if (!google::protobuf::util::JsonStringToMessage(st.out, &resp).ok()) return -1;
    for (const auto& s : resp.services()) {
      if (s.name() == "sessiond") return s.pid();
    }
    return -1;
  }

  std::vector<std::string> windows_;
};

// Detach, ps, attach from another window at another size, typing, kill -9
// of the attached client, re-attach, an inline approval there, stop.
TEST_F(AttachE2eTest, DetachAttachElsewhereKillTheClientApproveThereAndStop) {
  UserDir ws("attws");
  const std::string id = StartRun("att-run", ws.path());
  ASSERT_FALSE(id.empty());
  AgentRuns("echo run-sees-$((6*7))", "one", "att-run");
  ASSERT_TRUE(tmux().WaitForText("att-run", "run-sees-42"));
  ASSERT_TRUE(tmux().WaitForText("att-run", "DONE-one-0"));

  // Ctrl-\ d: the run detaches (exit 0) and says how to come back.
  ASSERT_TRUE(Detach("att-run"));
  ASSERT_TRUE(tmux().WaitForExit("att-run", std::chrono::seconds(20)));
  EXPECT_EQ(tmux().PaneExitStatus("att-run"), 0);
  EXPECT_THAT(tmux().Capture("att-run"),
              HasSubstr("detached from session " + id + " (lazaret attach " + id + ")"));
  EXPECT_THAT(PsLine(id), HasSubstr("detached")) << Lazaret("/", {"ps"}).out;

  // Another terminal, another size: the agent sees it.
  OpenLazaret("att-two", 120, 40, {"attach", id.substr(0, 6)});
  ASSERT_TRUE(test::WaitFor([&] { return PsLine(id).find("detached") == std::string::npos; },
                            std::chrono::seconds(20)))
      << PsLine(id);
  AgentRuns("stty size", "size", "att-two");
  ASSERT_TRUE(tmux().WaitForText("att-two", "40 120"));
  ASSERT_TRUE(tmux().WaitForText("att-two", "DONE-size-0"));
  AgentRuns("echo typed-$((1+1))", "typed", "att-two");
  ASSERT_TRUE(tmux().WaitForText("att-two", "typed-2"));

  // kill -9 of the attached client: a detach; the agent keeps running.
  const pid_t client = PanePid("att-two");
  ASSERT_GT(client, 1);
  ASSERT_EQ(kill(client, SIGKILL), 0);
  ASSERT_TRUE(tmux().WaitForExit("att-two", std::chrono::seconds(10)));
  ASSERT_TRUE(test::WaitFor([&] { return PsLine(id).find("detached") != std::string::npos; },
                            std::chrono::seconds(20)))
      << PsLine(id);

  // Attach again: the shell is still the agent's, and the inline approver
  // prompts in this terminal.
  OpenLazaret("att-three", 100, 30, {"attach", id});
  AgentRuns("echo again-$((2+3))", "again", "att-three");
  ASSERT_TRUE(tmux().WaitForText("att-three", "again-5"));
  AgentRuns("/run/lazaret/escalate --justify 'from the re-attached terminal' -c id", "inl",
            "att-three");
  ASSERT_TRUE(tmux().WaitForText("att-three", kAttachPromptTitle, kDecisionWait));
  ASSERT_TRUE(ap::KeysCount(tmux(), "att-three"));
  ASSERT_TRUE(tmux().Keys("att-three", {"Enter"}));
  ASSERT_TRUE(tmux().WaitForText("att-three", "binary     /usr/bin/id"));
  ASSERT_TRUE(tmux().Keys("att-three", {"a"}));
  ASSERT_TRUE(ap::TypeShownCode(tmux(), "att-three"));
  ASSERT_TRUE(tmux().WaitForText("att-three", "DONE-inl-0", kDecisionWait));
  EXPECT_THAT(tmux().Capture("att-three"), Not(HasSubstr(kAttachPromptTitle)));
  std::vector<AuditRecord> a = Records(id, {"id"});
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(DecisionName(a.back()), "DECISION_APPROVED");
  EXPECT_EQ(a.back().approver().kind(), ::lazaret::approver::v1::Approver::KIND_INLINE);

  // `lazaret stop` from anywhere: the session ends in order, the attached
  // terminal gets its end.
  CommandResult stop = Lazaret("/", {"stop", id});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_THAT(stop.out, HasSubstr("stopped session " + id));
  ASSERT_TRUE(tmux().WaitForExit("att-three", kEndWait));
  EXPECT_EQ(PsLine(id), "");
  EXPECT_TRUE(test::WaitFor(
      [&] {
        for (const std::string& c : SessionContainers()) {
          if (c.find(id) != std::string::npos) return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
}

// kill -9 of lazaret-sessiond: each session worker gets its death signal
// and ends its session as `lazaret stop` does, commits written back.
// Last: it ends every session of the mode.
TEST_F(AttachE2eTest, KillNineOfSessiondEndsTheSessionWithItsWriteBack) {
  UserDir ws("attkill");
  ASSERT_EQ(RunAs(ws.path(), {"sh", "-c",
                              "git init -q -b main . && echo a > a.txt && git add a.txt && "
                              "git -c user.name=D -c user.email=d@x commit -qm 'first commit'"})
                .exit_code,
            0);
  const std::string id = StartRun("att-kill", ws.path());
  ASSERT_FALSE(id.empty());
  AgentRuns("git -c user.name=A -c user.email=a@x commit -q --allow-empty -m sessiond-killed",
            "commit", "att-kill");
  ASSERT_TRUE(tmux().WaitForText("att-kill", "DONE-commit-0"));
  const pid_t sessiond = SessiondPid();
  ASSERT_GT(sessiond, 1);
  ASSERT_EQ(kill(sessiond, SIGKILL), 0);
  // The run's terminal gets the session's end; the commit is on the host.
  ASSERT_TRUE(tmux().WaitForExit("att-kill", kEndWait)) << tmux().Capture("att-kill");
  EXPECT_EQ(Trim(RunAs(ws.path(), {"git", "log", "-1", "--format=%s",
                                   absl::StrCat("lazaret/agent-", kProfile)})
                     .out),
            "sessiond-killed");
  EXPECT_TRUE(test::WaitFor(
      [&] {
        for (const std::string& c : SessionContainers()) {
          if (c.find(id) != std::string::npos) return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
  // The supervisor starts sessiond again: sessions can be listed.
  EXPECT_TRUE(
      test::WaitFor([] { return Lazaret("/", {"ps"}).exit_code == 0; }, std::chrono::seconds(30)));
}

}  // namespace
}  // namespace lazaret::test::e2e::esc
