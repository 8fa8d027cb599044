// The fixture of the Git Shadow tests: real git on temporary repositories.
// The agent is simulated by running git - as root - inside an emulation of
// the sandbox's mount layout: a private mount namespace (`unshare -m`) with
// a fresh root on a tmpfs, the workspace bound at /workspace and every mount
// of the plan made exactly as podman makes it (read-only binds remounted
// read-only; nested mount points must already exist inside read-only binds,
// as under podman), then lazaret-sandbox-init and the agent's commands
// chrooted into it. Everything is then checked on the host.
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_TEST_FIXTURE_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_TEST_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/podman/mount_spec.h"

namespace lazaret::cli::gitshadow {

struct ShResult {
  int code = -1;
  std::string out;
};

// Runs a shell command (test scaffolding only) and returns its exit code and
// combined output.
ShResult Sh(const std::string& cmd);

class GitShadowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-gs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    state_dir_ = base_ + "/profile/git";
  }
  void TearDown() override {
    if (!HasFailure()) (void)!system(absl::StrCat("rm -rf ", base_).c_str());
  }

  // A repository with two commits on main, a tag, a second branch, a fake
  // remote-tracking ref, a staged-but-uncommitted file and a hook.
  std::string MakeRepo(const std::string& name);

  absl::StatusOr<GitShadowPlan> Plan(const std::string& workspace, const std::string& branch = "",
                                     bool worktree = false, const std::string& profile = "test");

  // Runs `script` with bash as the agent inside the emulated sandbox of
  // `plan`. Returns its exit code and output.
  ShResult RunInSandbox(const GitShadowPlan& plan, const std::string& script);

  bool CanEmulateSandbox();

  std::string base_;
  std::string state_dir_;
};

#define REQUIRE_SANDBOX_EMULATION()                                                            \
  if (!CanEmulateSandbox())                                                                    \
  GTEST_SKIP() << "needs root and unshare -m to emulate the sandbox's nested mounts (CI runs " \
                  "the tests as root)"

// The plan's mounts as "tmpfs <container>" and "ro|rw <host> <container>".
std::vector<std::string> Describe(const std::vector<Mount>& mounts);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_TEST_FIXTURE_H_
