// The fixture of the workspace scan tests: a temporary workspace, real
// git to plant repositories in it, and host git run there afterwards to see
// whether anything the agent planted still takes effect.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_TEST_FIXTURE_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_TEST_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "services/sessiond/workspace/roots.h"
#include "services/sessiond/workspace/scan.h"
#include "services/sessiond/workspace/snapshot.h"

namespace lazaret::cli::workspace {

bool Exists(const std::string& path);

struct Sh {
  int code;
  std::string out;
};

Sh RunSh(const std::string& cmd);

std::string Q(const std::string& s);

class WorkspaceScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/laz-wsscan-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    ws_ = base_ + "/ws";
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    marker_ = base_ + "/MARKER";
  }
  void TearDown() override {
    (void)!system(("chmod -R u+rwx " + base_ + "; rm -rf " + base_).c_str());
  }

  void Do(const std::string& cmd) {
    Sh r = RunSh(cmd);
    ASSERT_EQ(r.code, 0) << cmd << "\n" << r.out;
  }
  // A repository at `rel` (created with one commit).
  void Repo(const std::string& rel);
  // Makes host git in the repository whose git dir is `gitdir` run the
  // marker command from everything it can be told to run.
  void Arm(const std::string& gitdir);
  // Host git status/log/diff in `dir`; returns the git dir git found ("" if
  // none). The marker must not appear.
  std::string HostGitIn(const std::string& dir);
  std::string P(const std::string& rel) const { return ws_ + "/" + rel; }

  GitDirSnapshot Snapshot(bool quarantine = true);
  ScanReport End(const GitDirSnapshot& s, const ScanLimits& limits = {});

  std::string base_, ws_, marker_;
};

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_TEST_FIXTURE_H_
