#include "services/sessiond/workspace/test_fixture.h"

#include <stdio.h>
#include <sys/wait.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace lazaret::cli::workspace {

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

Sh RunSh(const std::string& cmd) {
  Sh r{-1, ""};
  FILE* p = popen(absl::StrCat("(", cmd, ") 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Q(const std::string& s) { return absl::StrCat("'", s, "'"); }

void WorkspaceScanTest::Repo(const std::string& rel) {
  Do(absl::StrCat("mkdir -p ", Q(P(rel)), " && cd ", Q(P(rel)),
                  " && git init -q && echo a > a && git add a && "
                  "git -c user.name=t -c user.email=t@x commit -qm one"));
}

void WorkspaceScanTest::Arm(const std::string& gitdir) {
  const std::string touch = absl::StrCat("touch ", marker_);
  for (const char* key : {"core.fsmonitor", "core.pager", "diff.external", "core.sshCommand"}) {
    Do(absl::StrCat("git config --file ", Q(gitdir + "/config"), " ", key, " ", Q(touch)));
  }
  Do(absl::StrCat("mkdir -p ", Q(gitdir + "/hooks"), " && printf '#!/bin/sh\\n", touch, "\\n' > ",
                  Q(gitdir + "/hooks/post-checkout"), " && chmod +x ",
                  Q(gitdir + "/hooks/post-checkout")));
}

std::string WorkspaceScanTest::HostGitIn(const std::string& dir) {
  RunSh(absl::StrCat("cd ", Q(dir), " && git status; git log -1; git diff; git diff HEAD"));
  Sh r = RunSh(absl::StrCat("cd ", Q(dir), " && git rev-parse --absolute-git-dir"));
  return r.code == 0 ? std::string(absl::StripTrailingAsciiWhitespace(r.out)) : "";
}

GitDirSnapshot WorkspaceScanTest::Snapshot(bool quarantine) {
  auto s = TakeGitDirSnapshot("s1", {{ws_, false}}, quarantine);
  EXPECT_TRUE(s.ok()) << s.status();
  usleep(20 * 1000);  // the session's writes get a later ctime
  return s.ok() ? *s : GitDirSnapshot{};
}

ScanReport WorkspaceScanTest::End(const GitDirSnapshot& s, const ScanLimits& limits) {
  // The snapshot goes through its file form, as for `lazaret clean`.
  auto parsed = ParseSnapshot(SerializeSnapshot(s));
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  auto r = ScanAtSessionEnd(*parsed, limits);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ScanReport{};
}

}  // namespace lazaret::cli::workspace
