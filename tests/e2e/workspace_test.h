// The fixture of the `lazaret run` end-to-end tests that work in a
// workspace of their own (run_e2e_test.cc, spare_e2e_test.cc): a
// workspace and a scratch directory owned by the mode's user, and at the
// end nothing of the test left (a spare excepted: LeftBehind).
#ifndef LAZARET_TESTS_E2E_WORKSPACE_TEST_H_
#define LAZARET_TESTS_E2E_WORKSPACE_TEST_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/run_e2e_support.h"

namespace lazaret::test::e2e {

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the e2e tests run as root (rootless ones through setpriv)";
    ws_ = std::make_unique<UserDir>("ws");
    aux_ = std::make_unique<UserDir>("aux");
  }
  void TearDown() override {
    // Nothing of this test may outlive it, whatever happened.
    EXPECT_THAT(LeftBehind(), ::testing::IsEmpty())
        << "containers or session directories left behind";
  }

  // `lazaret ARGS` in the workspace.
  CommandResult Run(const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& extra = {}) {
    return Lazaret(ws_->path(), args, extra);
  }

  std::unique_ptr<UserDir> ws_;
  std::unique_ptr<UserDir> aux_;
};

}  // namespace lazaret::test::e2e

#endif  // LAZARET_TESTS_E2E_WORKSPACE_TEST_H_
