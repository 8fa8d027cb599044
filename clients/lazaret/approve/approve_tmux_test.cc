// The real `lazaret approve` in tmux at 80x24, as a person uses it, against
// a fake ApproverService on a real Unix socket in a runtime directory of
// its own: keys typed with send-keys, the screen read with capture-pane.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/lazaret/approve/fake_approver_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/runtime_dir.h"
#include "services/common/unix_server.h"
#include "tests/support/test_support.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;
using ::testing::HasSubstr;
using ::testing::Not;

pb::PendingRequest Request(const std::string& id, const std::string& command) {
  pb::PendingRequest r;
  r.set_request_id(id);
  r.set_profile("dev");
  r.set_session_id("s-1");
  r.set_workspace("/home/u/proj");
  r.set_command(command);
  r.set_justification("to test");
  for (absl::string_view a : absl::StrSplit(command, ' ')) r.add_argv(std::string(a));
  r.set_binary("/usr/bin/" + r.argv(0));
  r.set_cwd("/home/u/proj");
  r.set_reason_not_auto("no auto_approve entry matches");
  r.set_deadline_unix(time(nullptr) + 600);
  return r;
}

// Whether `text` is drawn inside a reverse-video span of capture-pane -e's
// output.
bool Marked(const std::string& esc, const std::string& text) {
  const size_t pos = esc.find(text);
  if (pos == std::string::npos) return false;
  const size_t on = esc.rfind("\x1b[7m", pos);
  const size_t off = esc.rfind("\x1b[0m", pos);
  return on != std::string::npos && (off == std::string::npos || off < on);
}

class ApproveTmuxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (test::Run({"tmux", "-V"}).exit_code != 0) GTEST_SKIP() << "tmux is not installed";
    auto listener = UnixListener::Bind(SocketPath(dir_.path(), "brokerd"));
    ASSERT_TRUE(listener.ok()) << listener.status();
    auto server = GrpcUnixServer::Start(std::move(*listener), {&fake_}, {.allowed_uid = geteuid()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override {
    Tmux({"kill-server"});
    if (server_ != nullptr) server_->Shutdown();
  }

  test::CommandResult Tmux(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"tmux", "-S", sock_, "-f", "/dev/null"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::Run(argv);
  }

  // Starts `lazaret approve` in a pane; a shell around it says how it ended
  // and keeps the pane open.
  void Start(const std::string& env = "", const std::string& args = "") {
    const std::string line = absl::StrCat("env LANG=C.UTF-8 LAZARET_RUNTIME_DIR='", dir_.path(),
                                          "' ", env, " '", test::Binary("lazaret"), "' approve ",
                                          args, "; printf 'EXITED-%s\\n' $?; exec sleep 600");
    ASSERT_EQ(Tmux({"new-session", "-d", "-s", target_, "-x", "80", "-y", "24", line}).exit_code,
              0);
    ASSERT_TRUE(WaitPane("lazaret approve  ")) << Pane();
    ASSERT_TRUE(test::WaitFor(
        [&] {
          std::lock_guard<std::mutex> l(fake_.mu);
          return fake_.watching > 0;
        },
        std::chrono::seconds(10)));
  }

  std::string Pane(bool escapes = false) {
    std::vector<std::string> args = {"capture-pane", "-p", "-t", target_};
    if (escapes) args.push_back("-e");
    return Tmux(args).out;
  }
  bool WaitPane(const std::string& text, bool escapes = false) {
    return test::WaitFor([&] { return absl::StrContains(Pane(escapes), text); },
                         std::chrono::seconds(10));
  }
  void Keys(const std::vector<std::string>& keys) {
    std::vector<std::string> args = {"send-keys", "-t", target_};
    args.insert(args.end(), keys.begin(), keys.end());
    ASSERT_EQ(Tmux(args).exit_code, 0);
  }
  void Literal(const std::string& text) {
    ASSERT_EQ(Tmux({"send-keys", "-t", target_, "-l", text}).exit_code, 0);
  }

  std::vector<pb::DecideRequest> Decides() {
    std::lock_guard<std::mutex> l(fake_.mu);
    return fake_.decides;
  }
  bool WaitDecides(size_t n) {
    return test::WaitFor([&] { return Decides().size() >= n; }, std::chrono::seconds(10));
  }

  test::TempDir dir_{"laz-appr"};
  // A tmux server per test, its socket in the test's directory (kill-server
  // of the one before is not waited for).
  std::string sock_ = dir_.path() + "/tmux";
  std::string target_ = "t";
  FakeApproverService fake_;
  std::unique_ptr<GrpcUnixServer> server_;
};

TEST_F(ApproveTmuxTest, ApproveDecidesAndTheBrokerSeesATerminalApprover) {
  Start();
  fake_.Add(Request("r-1", "git push origin main"));
  ASSERT_TRUE(WaitPane("> r-1  dev  git push origin main")) << Pane();
  Keys({"a"});
  ASSERT_TRUE(WaitDecides(1));
  EXPECT_TRUE(Decides()[0].has_approve());
  EXPECT_EQ(Decides()[0].request_id(), "r-1");
  EXPECT_EQ(Decides()[0].approver().kind(), pb::Approver::KIND_TERMINAL);
  EXPECT_EQ(Decides()[0].approver().name(), "lazaret approve");
  EXPECT_GT(Decides()[0].approver().pid(), 0);
  EXPECT_TRUE(absl::StartsWith(Decides()[0].approver().tty(), "/dev/pts/"));
  EXPECT_TRUE(WaitPane("approved r-1")) << Pane();
  EXPECT_TRUE(WaitPane("0 pending")) << Pane();
  {
    std::lock_guard<std::mutex> l(fake_.mu);
    ASSERT_FALSE(fake_.watches.empty());
    EXPECT_EQ(fake_.watches[0].approver().kind(), pb::Approver::KIND_TERMINAL);
  }
  // The output of the last approved request.
  Keys({"o"});
  EXPECT_TRUE(WaitPane("output of r-1")) << Pane();
  Keys({"Escape"});
  ASSERT_TRUE(WaitPane("No pending requests")) << Pane();
  Keys({"q"});
  EXPECT_TRUE(WaitPane("EXITED-0")) << Pane();
}

TEST_F(ApproveTmuxTest, DenyWithAReason) {
  Start();
  fake_.Add(Request("r-1", "rm -rf /tmp/x"));
  ASSERT_TRUE(WaitPane("> r-1")) << Pane();
  Keys({"d"});
  ASSERT_TRUE(WaitPane("Deny: reason")) << Pane();
  Literal("not today");
  ASSERT_TRUE(WaitPane("> not today")) << Pane();
  // The cursor stands after the reason.
  EXPECT_EQ(Tmux({"display", "-p", "-t", target_, "#{cursor_x}"}).out, "11\n");
  Keys({"Enter"});
  ASSERT_TRUE(WaitDecides(1));
  EXPECT_EQ(Decides()[0].deny().reason(), "not today");
  EXPECT_TRUE(WaitPane("denied r-1")) << Pane();
}

TEST_F(ApproveTmuxTest, EditChangesTheArgvAfterAConfirmation) {
  Start();
  fake_.Add(Request("r-1", "git push origin main"));
  ASSERT_TRUE(WaitPane("> r-1")) << Pane();
  Keys({"e"});
  ASSERT_TRUE(WaitPane("> git push origin main")) << Pane();
  Keys({"C-w"});
  Literal("dev");
  // Word jumps and undo, as tmux sends them.
  Keys({"C-Left"});
  Literal("x");
  Keys({"M-b", "M-b"});
  Literal("y");
  ASSERT_TRUE(WaitPane("> git push yorigin xdev")) << Pane();
  Keys({"C-_"});
  Keys({"C-z"});
  ASSERT_TRUE(WaitPane("> git push origin dev")) << Pane();
  Keys({"Enter"});
  ASSERT_TRUE(WaitPane("Run the edited command? (y/n)")) << Pane();
  EXPECT_THAT(Pane(), HasSubstr("new argv   [0] git"));
  EXPECT_THAT(Pane(), HasSubstr("[3] dev"));
  EXPECT_TRUE(Decides().empty());
  Keys({"y"});
  ASSERT_TRUE(WaitDecides(1));
  EXPECT_EQ(Decides()[0].edit().command(), "git push origin dev");
  {
    std::lock_guard<std::mutex> l(fake_.mu);
    ASSERT_EQ(fake_.parses.size(), 1u);
    EXPECT_EQ(fake_.parses[0].command(), "git push origin dev");
  }
}

TEST_F(ApproveTmuxTest, AbortAsksForAConfirmation) {
  Start();
  fake_.Add(Request("r-1", "curl evil"));
  ASSERT_TRUE(WaitPane("> r-1")) << Pane();
  Keys({"Q"});
  ASSERT_TRUE(WaitPane("stop its sandbox? (y/n)")) << Pane();
  Keys({"n"});
  ASSERT_TRUE(WaitPane("Enter details")) << Pane();
  EXPECT_TRUE(Decides().empty());
  Keys({"Q"});
  ASSERT_TRUE(WaitPane("stop its sandbox? (y/n)")) << Pane();
  Keys({"y"});
  ASSERT_TRUE(WaitDecides(1));
  EXPECT_TRUE(Decides()[0].has_abort());
}

TEST_F(ApproveTmuxTest, DecidedElsewhereLeavesWithANotice) {
  Start();
  fake_.Add(Request("r-1", "make"));
  ASSERT_TRUE(WaitPane("> r-1")) << Pane();
  fake_.Resolve("r-1", "approved by ci-script");
  EXPECT_TRUE(WaitPane("r-1 decided elsewhere: approved by ci-script")) << Pane();
  EXPECT_TRUE(WaitPane("0 pending")) << Pane();
}

TEST_F(ApproveTmuxTest, HostileTextIsShownEscapedAndMarkedAndLeavesThePaneAlone) {
  Start();
  pb::PendingRequest r = Request("r-1", "echo x");
  r.set_command(
      "echo \x1b[2J\x1b]2;pwned\x07\xE2\x80\xAEtxt\xE2\x80\x8B"
      "end");
  r.set_justification("\x1b[31mred\x1b[0m");
  r.set_had_invisible(true);
  fake_.Add(r);
  ASSERT_TRUE(WaitPane("> r-1")) << Pane();
  Keys({"Enter"});
  ASSERT_TRUE(WaitPane("command    echo \\x1b[2J\\x1b]2;pwned\\x07\\u{202E}txt\\u{200B}end"))
      << Pane();
  EXPECT_THAT(Pane(), HasSubstr("why        \\x1b[31mred\\x1b[0m"));
  // Marked: reverse video around each escape.
  const std::string esc = Pane(true);
  EXPECT_TRUE(Marked(esc, "\\u{202E}")) << esc;
  EXPECT_TRUE(Marked(esc, "\\u{200B}")) << esc;
  EXPECT_TRUE(Marked(esc, "\\x1b")) << esc;
  EXPECT_TRUE(Marked(esc, "\\x07")) << esc;
  EXPECT_FALSE(Marked(esc, "txt")) << esc;
  EXPECT_FALSE(Marked(esc, "[2J")) << esc;
  EXPECT_NE(Tmux({"display", "-p", "-t", target_, "#{pane_title}"}).out, "pwned\n");
  const int x = std::stoi(Tmux({"display", "-p", "-t", target_, "#{cursor_x}"}).out);
  EXPECT_GE(x, 0);
  EXPECT_LT(x, 80);
  Keys({"q"});  // back to the list
  Keys({"q"});  // quit
  ASSERT_TRUE(WaitPane("EXITED-0")) << Pane();
  // The terminal is restored: no attribute left on the shell's output.
  const std::string after = Pane(true);
  EXPECT_THAT(after, Not(HasSubstr("\x1b[7m"))) << after;
  EXPECT_THAT(after, Not(HasSubstr("\x1b[3"))) << after;
  EXPECT_EQ(Tmux({"display", "-p", "-t", target_, "#{alternate_on}"}).out, "0\n");
}

TEST_F(ApproveTmuxTest, FollowsResizes) {
  Start();
  fake_.Add(Request("r-1", "make install"));
  ASSERT_TRUE(WaitPane("> r-1")) << Pane();
  Tmux({"resize-window", "-t", target_, "-x", "100", "-y", "30"});
  ASSERT_TRUE(test::WaitFor(
      [&] {
        const std::string p = Pane();
        std::vector<std::string> rows = absl::StrSplit(p, '\n');
        return rows.size() >= 30 && absl::StrContains(rows[29], "Enter details") &&
               rows[1].size() == 100 && absl::EndsWith(rows[1], "s");
      },
      std::chrono::seconds(10)))
      << Pane();
  Tmux({"resize-window", "-t", target_, "-x", "80", "-y", "24"});
  ASSERT_TRUE(test::WaitFor(
      [&] {
        std::vector<std::string> rows = absl::StrSplit(Pane(), '\n');
        return rows.size() >= 24 && absl::StrContains(rows[23], "Enter details");
      },
      std::chrono::seconds(10)))
      << Pane();
}

TEST_F(ApproveTmuxTest, ColourOnlyWithoutNoColor) {
  pb::PendingRequest r = Request("r-1", "echo x");
  r.set_command("echo \xE2\x80\xAE");
  fake_.Add(r);
  Start();
  ASSERT_TRUE(WaitPane("\\u{202E}")) << Pane();
  EXPECT_THAT(Pane(true), HasSubstr("\x1b[33m")) << Pane(true);
  Keys({"C-c"});
  ASSERT_TRUE(WaitPane("EXITED-0")) << Pane();
  target_ = "t2";

  Start("NO_COLOR=1");
  ASSERT_TRUE(WaitPane("\\u{202E}")) << Pane();
  const std::string esc = Pane(true);
  EXPECT_TRUE(Marked(esc, "\\u{202E}")) << esc;
  EXPECT_THAT(esc, Not(HasSubstr("\x1b[33m"))) << esc;
  Keys({"C-c"});
  EXPECT_TRUE(WaitPane("EXITED-0")) << Pane();
}

TEST_F(ApproveTmuxTest, SigtermRestoresTheTerminal) {
  Start();
  fake_.Add(Request("r-1", "make"));
  ASSERT_TRUE(WaitPane("> r-1")) << Pane();
  pid_t pid = 0;
  {
    std::lock_guard<std::mutex> l(fake_.mu);
    pid = fake_.watches[0].approver().pid();
  }
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  ASSERT_TRUE(WaitPane("EXITED-0")) << Pane();
  EXPECT_EQ(Tmux({"display", "-p", "-t", target_, "#{alternate_on}"}).out, "0\n");
  EXPECT_TRUE(Decides().empty());
}

TEST_F(ApproveTmuxTest, SaysSoWhenTheBrokerIsNotRunning) {
  server_->Shutdown();
  const std::string line =
      absl::StrCat("env LANG=C.UTF-8 LAZARET_RUNTIME_DIR='", dir_.path(), "' '",
                   test::Binary("lazaret"), "' approve; printf 'EXITED-%s\\n' $?; exec sleep 600");
  ASSERT_EQ(Tmux({"new-session", "-d", "-s", target_, "-x", "80", "-y", "24", line}).exit_code, 0);
  EXPECT_TRUE(WaitPane("lazaret-brokerd does not answer")) << Pane();
  Keys({"q"});
  EXPECT_TRUE(WaitPane("EXITED-0")) << Pane();
}

TEST_F(ApproveTmuxTest, WatchesOnlyTheGivenSession) {
  Start("", "--session s-7");
  std::lock_guard<std::mutex> l(fake_.mu);
  ASSERT_EQ(fake_.watches.size(), 1u);
  EXPECT_EQ(fake_.watches[0].session_id(), "s-7");
}

TEST_F(ApproveTmuxTest, QuitsOnQAtTheEmptyList) {
  Start();
  ASSERT_TRUE(WaitPane("No pending requests")) << Pane();
  Keys({"q"});
  EXPECT_TRUE(WaitPane("EXITED-0")) << Pane();
}

}  // namespace
}  // namespace lazaret::cli::approve
