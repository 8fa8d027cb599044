// The gtest fixture of the escalation end-to-end tests
// (escalation_e2e_*_test.cc): every test needs root and the shared world
// (escalation_e2e_world.h). Runs in the test process as root.
#ifndef LAZARET_TESTS_E2E_ESCALATION_E2E_FIXTURE_H_
#define LAZARET_TESTS_E2E_ESCALATION_E2E_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/e2e/escalation_e2e_support.h"
#include "tests/e2e/escalation_e2e_world.h"
#include "tests/e2e/run_e2e_support.h"
#include "tests/support/test_support.h"

namespace lazaret::test::e2e::esc {

class EscE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the e2e tests run as root (rootless ones through setpriv)";
    ASSERT_TRUE(W().error().empty()) << W().error();
  }
  static EscWorld& W() { return EscWorld::Get(); }
  static net::NetSession* S(Slot slot) { return W().Session(slot); }
  static std::string Why(Slot slot) { return W().SessionError(slot); }
};

// Each escalation e2e binary registers this once: it tears the shared world
// down after the last test and fails when a container outlives it.
class EscWorldEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    EscWorld::Destroy();
    EXPECT_TRUE(test::WaitFor([] { return SessionContainers().empty(); }, std::chrono::seconds(60)))
        << "containers left behind";
  }
};

// The audit records of a session; a failure to read them fails the test.
#define ASSERT_AUDIT(var, session)                                    \
  absl::StatusOr<std::vector<AuditRecord>> var##_or = Audit(session); \
  ASSERT_TRUE(var##_or.ok()) << var##_or.status();                    \
  const std::vector<AuditRecord>& var = *var##_or

}  // namespace lazaret::test::e2e::esc

#endif  // LAZARET_TESTS_E2E_ESCALATION_E2E_FIXTURE_H_
