#include "tests/e2e/approve_e2e_support.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "services/spawn/command_line.h"
#include "tests/e2e/escalation_e2e_support.h"
#include "tests/e2e/net_e2e_support.h"
#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e::approve {

std::string ShellLine(const std::vector<std::string>& argv) {
  return cli::CommandLine(argv);
}

absl::StatusOr<std::string> StartAgent(TmuxSession& tmux, const std::string& window,
                                       const std::string& workspace, const std::string& config,
                                       const std::string& profile,
                                       const std::vector<std::string>& options) {
  const std::vector<std::string> before = net::RunningSandboxes(profile);
  std::vector<std::string> argv = {test::Binary("lazaret"), "run", "--config", config};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(profile);
  const std::string line =
      absl::StrCat("cd ", ShellLine({workspace}), " && exec ",
                   ShellLine(AsMode(argv, {{"TERM", "xterm-256color"}, {"LANG", "C.UTF-8"}})));
  if (!tmux.NewWindow(window, 100, 30, line)) return absl::InternalError("tmux new-session failed");
  std::string id;
  const bool found = test::WaitFor(
      [&] {
        for (const std::string& c : net::RunningSandboxes(profile)) {
          if (std::find(before.begin(), before.end(), c) == before.end()) id = c;
        }
        return !id.empty() || tmux.PaneDead(window);
      },
      std::chrono::seconds(120));
  if (!found || id.empty()) {
    return absl::DeadlineExceededError(
        absl::StrCat("no new sandbox of profile ", profile, ":\n", tmux.Capture(window)));
  }
  ::testing::AssertionResult prompt = tmux.WaitForText(window, kPrompt, std::chrono::seconds(60));
  if (!prompt) return absl::DeadlineExceededError(prompt.message());
  return id;
}

namespace {

// The broker's ListSessions entry of `session`; false when it could not be
// asked or does not know the session.
bool SessionEntry(const std::string& session, ::lazaret::approver::v1::SessionEndpoint* out) {
  CommandResult r = RunAs(
      "/", {test::Binary("lazaret-test-approver"), "--socket=" + esc::BrokerSocket(), "sessions"});
  if (r.exit_code != 0) return false;
  ::lazaret::approver::v1::ListSessionsResponse resp;
  if (!google::protobuf::util::JsonStringToMessage(r.out, &resp).ok()) return false;
  for (const auto& s : resp.sessions()) {
    if (s.session_id() == session) {
      *out = s;
      return true;
    }
  }
  return false;
}

}  // namespace

int TerminalApprovers(const std::string& session) {
  ::lazaret::approver::v1::SessionEndpoint s;
  return SessionEntry(session, &s) ? static_cast<int>(s.approvers_terminal()) : -1;
}

int PendingRequests(const std::string& session) {
  ::lazaret::approver::v1::SessionEndpoint s;
  return SessionEntry(session, &s) ? static_cast<int>(s.pending()) : -1;
}

::testing::AssertionResult StartApprover(TmuxSession& tmux, const std::string& window,
                                         const std::string& session, int expected,
                                         const std::string& first_screen) {
  const std::string line =
      absl::StrCat(ShellLine(AsMode({test::Binary("lazaret"), "approve", "--session", session},
                                    {{"TERM", "tmux-256color"}, {"LANG", "C.UTF-8"}})),
                   "; printf 'EXITED-%s\\n' $?; exec sleep 600");
  if (!tmux.NewWindow(window, 80, 24, line)) {
    return ::testing::AssertionFailure() << "tmux new-session failed";
  }
  ::testing::AssertionResult idle = tmux.WaitForText(window, first_screen);
  if (!idle) return idle;
  int seen = -1;
  if (!test::WaitFor(
          [&] {
            seen = TerminalApprovers(session);
            return seen == expected;
          },
          std::chrono::seconds(10))) {
    return ::testing::AssertionFailure()
           << "the broker counts " << seen << " terminal approvers of " << session << ", not "
           << expected << ":\n"
           << tmux.Capture(window);
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult KeysCount(TmuxSession& tmux, const std::string& window) {
  return tmux.WaitForTextGone(window, "keys ignored", std::chrono::seconds(10));
}

std::string ShownCode(const std::string& screen) {
  const size_t at = screen.find("Type ");
  if (at == std::string::npos || screen.size() < at + 5 + 4) return "";
  const std::string code = screen.substr(at + 5, 4);
  if (!std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "";
  }
  return code;
}

::testing::AssertionResult TypeShownCode(TmuxSession& tmux, const std::string& window,
                                         const std::string& prompt) {
  ::testing::AssertionResult shown = tmux.WaitForText(window, prompt, std::chrono::seconds(10));
  if (!shown) return shown;
  const std::string code = ShownCode(tmux.Capture(window));
  if (code.empty()) {
    return ::testing::AssertionFailure() << "no code on the screen:\n" << tmux.Capture(window);
  }
  if (!tmux.Literal(window, code)) return ::testing::AssertionFailure() << "send-keys failed";
  ::testing::AssertionResult typed =
      tmux.WaitForText(window, "code: " + code, std::chrono::seconds(10));
  if (!typed) return typed;
  if (!tmux.Keys(window, {"Enter"})) return ::testing::AssertionFailure() << "send-keys failed";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ApproveSelected(TmuxSession& tmux, const std::string& window) {
  ::testing::AssertionResult ready = KeysCount(tmux, window);
  if (!ready) return ready;
  if (!tmux.Keys(window, {"a"})) return ::testing::AssertionFailure() << "send-keys failed";
  return TypeShownCode(tmux, window);
}


bool HasRow(const std::string& screen, const std::string& row) {
  for (absl::string_view r : absl::StrSplit(screen, '\n')) {
    if (absl::StripTrailingAsciiWhitespace(r) == row) return true;
  }
  return false;
}

}  // namespace lazaret::test::e2e::approve
