// The fixture of the `lazaret approve` and inline-prompt end-to-end tests
// (approve_e2e_test.cc, approve_inline_e2e_test.cc): one agent session
// shared by the cases that leave it running (its `lazaret run` shell in a
// tmux window), approver windows opened per case, and after each case a
// wait until the broker has nothing pending and no terminal approver of
// it. Runs in the test process as root; what the windows show comes from
// the sandbox and is only compared.
#ifndef LAZARET_TESTS_E2E_APPROVE_E2E_FIXTURE_H_
#define LAZARET_TESTS_E2E_APPROVE_E2E_FIXTURE_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/e2e/approve_e2e_support.h"
#include "tests/e2e/escalation_e2e_fixture.h"
#include "tests/support/tmux_session.h"

namespace lazaret::test::e2e::esc {

using Strings = std::vector<std::string>;
namespace ap = ::lazaret::test::e2e::approve;

inline constexpr char kAgent[] = "agent";
inline constexpr auto kDecisionWait = std::chrono::seconds(30);

// The agent's session, shared by the cases that leave it running.
struct Shared {
  test::TempDir dir{"laz-appr-e2e"};
  test::TmuxSession tmux{dir.path()};
  UserDir workspace{"apprws"};
  std::string id;
  std::string error;
};
inline Shared* shared = nullptr;

class ApproveE2eTest : public EscE2eTest {
 protected:
  void SetUp() override {
    EscE2eTest::SetUp();
    if (HasFatalFailure()) return;
    if (!test::TmuxSession::Available()) GTEST_SKIP() << "tmux is not installed";
    if (shared == nullptr) {
      shared = new Shared();
      absl::StatusOr<std::string> id =
          ap::StartAgent(shared->tmux, kAgent, shared->workspace.path(), W().config(), kProfile);
      if (id.ok()) {
        shared->id = *id;
      } else {
        shared->error = id.status().ToString();
      }
    }
    ASSERT_TRUE(shared->error.empty()) << shared->error;
    Agent({"clear", "Enter"});
  }
  void TearDown() override {
    if (shared == nullptr) return;
    for (const std::string& w : windows_) tmux().Tmux({"kill-session", "-t", "=" + w});
    // A request a failed case left waiting would be the next case's.
    if (HasFailure()) Agent({"C-c"});
    EXPECT_TRUE(test::WaitFor([] { return ap::PendingRequests(shared->id) == 0; },
                              std::chrono::seconds(kApprovalTimeout + 5)))
        << "requests still pending";
    EXPECT_TRUE(test::WaitFor([] { return ap::TerminalApprovers(shared->id) == 0; },
                              std::chrono::seconds(10)))
        << "terminal approvers still counted";
  }

  static test::TmuxSession& tmux() { return shared->tmux; }
  static const std::string& id() { return shared->id; }
  // Opens an approver window on `session` and waits until the broker counts
  // `expected` terminal approvers of it.
  void Approver(const std::string& window, const std::string& session, int expected,
                const std::string& first_screen = "No pending requests") {
    windows_.push_back(window);
    ASSERT_TRUE(ap::StartApprover(tmux(), window, session, expected, first_screen));
  }
  static void Agent(const std::vector<std::string>& keys, const std::string& window = kAgent) {
    ASSERT_TRUE(tmux().Keys(window, keys));
  }
  // Types a command line into the agent's shell; DONE-<tag>-<status> follows
  // its output.
  static void AgentRuns(const std::string& line, const std::string& tag,
                        const std::string& window = kAgent) {
    ASSERT_TRUE(tmux().Literal(window, line + "; echo DONE-" + tag + "-$?"));
    ASSERT_TRUE(tmux().Keys(window, {"Enter"}));
  }
  static std::string Screen(const std::string& window, bool escapes = false) {
    return tmux().Capture(window, escapes);
  }
  // The audit records of `session` with this argv, once `n` are there.
  static std::vector<AuditRecord> Records(const std::string& session, const Strings& argv,
                                          size_t n = 1) {
    std::vector<AuditRecord> out;
    test::WaitFor(
        [&] {
          absl::StatusOr<std::vector<AuditRecord>> all = Audit(session);
          out = all.ok() ? WithArgv(*all, argv) : std::vector<AuditRecord>{};
          return out.size() >= n;
        },
        std::chrono::seconds(10));
    return out;
  }

  std::vector<std::string> windows_;
};

}  // namespace lazaret::test::e2e::esc

#endif  // LAZARET_TESTS_E2E_APPROVE_E2E_FIXTURE_H_
