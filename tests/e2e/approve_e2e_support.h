// Helpers of the `lazaret approve` end-to-end test (approve_e2e_test.cc):
// the agent is a real `lazaret run` whose sandbox shell runs in a tmux
// window, the approver is the real `lazaret approve` in another window of
// the same tmux server, and the broker is asked (ListSessions, through
// lazaret-test-approver) how many terminal approvers watch a session. Runs
// in the test process as root; the programs run as the mode's user
// (run_e2e_support.h). What the windows show comes from the sandbox and is
// only compared.
#ifndef LAZARET_TESTS_E2E_APPROVE_E2E_SUPPORT_H_
#define LAZARET_TESTS_E2E_APPROVE_E2E_SUPPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/support/tmux_session.h"

namespace lazaret::test::e2e::approve {

// The prompt of the sandbox's shell.
inline constexpr char kPrompt[] = "/workspace#";

// argv as one shell line (process/command_line.h: each word quoted as a
// shell needs it).
std::string ShellLine(const std::vector<std::string>& argv);

// Opens `window` (100x30) running `lazaret run --config CONFIG [OPTIONS]
// PROFILE` in `workspace` (the sandbox's shell), waits for the new sandbox
// and its prompt, and returns the session id.
absl::StatusOr<std::string> StartAgent(TmuxSession& tmux, const std::string& window,
                                       const std::string& workspace, const std::string& config,
                                       const std::string& profile,
                                       const std::vector<std::string>& options = {});

// The terminal approvers the broker counts for `session` (ListSessions);
// -1 when the broker could not be asked or does not know the session.
int TerminalApprovers(const std::string& session);
// The requests of `session` waiting for a decision; -1 as above.
int PendingRequests(const std::string& session);

// Opens `window` (80x24) running `lazaret approve --session SESSION` with
// TERM=tmux-256color (what a pane of tmux has); a
// shell around it prints EXITED-<status> when it ends. Waits for
// `first_screen` on its screen and for the broker to count `expected`
// terminal approvers.
::testing::AssertionResult StartApprover(TmuxSession& tmux, const std::string& window,
                                         const std::string& session, int expected,
                                         const std::string& first_screen = "No pending requests");

// Waits until the approver in `window` takes keys again: the guard that
// ignores keys when a request comes into view has ended.
::testing::AssertionResult KeysCount(TmuxSession& tmux, const std::string& window);

// The code the confirmation on `screen` asks for ("Type 4821 then Enter");
// empty when none shows.
std::string ShownCode(const std::string& screen);

// Confirms what is open in `window` (the approval a opened, or the edited
// command once checked): waits for `prompt`, reads the code off the screen,
// types it and Enter.
::testing::AssertionResult TypeShownCode(TmuxSession& tmux, const std::string& window,
                                         const std::string& prompt = "then Enter to approve");

// Approves the request selected in `window` as a person does: waits for
// the guard to end, a, then the code and Enter.
::testing::AssertionResult ApproveSelected(TmuxSession& tmux, const std::string& window);

// True when a row of the screen is exactly `row` (trailing blanks aside).
bool HasRow(const std::string& screen, const std::string& row);

}  // namespace lazaret::test::e2e::approve

#endif  // LAZARET_TESTS_E2E_APPROVE_E2E_SUPPORT_H_
