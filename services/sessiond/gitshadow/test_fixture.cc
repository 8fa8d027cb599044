#include "services/sessiond/gitshadow/test_fixture.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <variant>

#include "absl/strings/str_join.h"
#include "tests/support/git_test_util.h"

namespace lazaret::cli::gitshadow {

using test::HostGit;
using test::ShellQuote;

ShResult Sh(const std::string& cmd) {
  ShResult r;
  FILE* f = popen(absl::StrCat("( ", cmd, " ) 2>&1").c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) r.out.append(buf, n);
  const int status = pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string GitShadowTest::MakeRepo(const std::string& name) {
  const std::string repo = absl::StrCat(base_, "/", name);
  Sh(absl::StrCat("mkdir -p ", ShellQuote(repo)));
  HostGit(repo, "init -q");
  HostGit(repo, "config user.name Dev");
  HostGit(repo, "config user.email dev@example.com");
  Sh(absl::StrCat("cd ", ShellQuote(repo), " && echo one > a.txt && echo keep > b.txt"));
  HostGit(repo, "add a.txt b.txt");
  HostGit(repo, "commit -q -m one");
  HostGit(repo, "tag v1");
  HostGit(repo, "branch feature");
  Sh(absl::StrCat("cd ", ShellQuote(repo), " && echo two >> a.txt"));
  HostGit(repo, "commit -q -am two");
  HostGit(repo, "update-ref refs/remotes/origin/main HEAD~1");
  Sh(absl::StrCat("cd ", ShellQuote(repo), " && echo staged > staged.txt"));
  HostGit(repo, "add staged.txt");
  Sh(absl::StrCat("cd ", ShellQuote(repo),
                  " && printf '#!/bin/sh\\ntouch /tmp/dev-hook-ran\\n' > .git/hooks/pre-commit"
                  " && chmod +x .git/hooks/pre-commit"));
  return repo;
}

absl::StatusOr<GitShadowPlan> GitShadowTest::Plan(const std::string& workspace,
                                                  const std::string& branch, bool worktree,
                                                  const std::string& profile) {
  GitShadowRequest req;
  req.workspace_dir = workspace;
  req.profile = profile;
  // Each profile has a state directory of its own, as under lazaret run.
  req.state_dir = profile == "test" ? state_dir_ : absl::StrCat(base_, "/", profile, "/git");
  req.branch = branch;
  req.worktree_mode = worktree;
  return PlanGitShadow(req);
}

ShResult GitShadowTest::RunInSandbox(const GitShadowPlan& plan, const std::string& script) {
  if (geteuid() != 0) return ShResult{-2, "not root"};
  const std::string root = absl::StrCat(base_, "/sandbox-root");
  std::string s = "set -e\n";
  absl::StrAppend(&s, "R=", ShellQuote(root), "\nmkdir -p \"$R\"\nmount -t tmpfs tmpfs \"$R\"\n",
                  "mkdir -p \"$R/usr\" \"$R/etc\" \"$R/dev\" \"$R/tmp\" \"$R/root\" "
                  "\"$R/proc\" \"$R/workspace\" \"$R/run/lazaret/bin\"\n",
                  "for d in bin lib lib64 sbin; do ln -s usr/$d \"$R/$d\"; done\n",
                  "mount --rbind /usr \"$R/usr\"; mount -o remount,ro,bind \"$R/usr\"\n",
                  "mount --rbind /etc \"$R/etc\"; mount -o remount,ro,bind \"$R/etc\"\n",
                  "mount --rbind /dev \"$R/dev\"\nmount -t proc proc \"$R/proc\"\n",
                  "mount -t tmpfs tmpfs \"$R/tmp\"\n", "mount --bind ",
                  ShellQuote(plan.workspace_host_dir), " \"$R/workspace\"\n");
  for (const Mount& m : plan.mounts) {
    if (const auto* t = std::get_if<TmpfsMount>(&m)) {
      absl::StrAppend(&s, "mkdir -p \"$R\"", ShellQuote(t->container),
                      "\nmount -t tmpfs -o mode=", t->mode, " tmpfs \"$R\"",
                      ShellQuote(t->container), "\n");
      continue;
    }
    const auto& b = std::get<BindMount>(m);
    const std::string target = absl::StrCat("\"$R\"", ShellQuote(b.container));
    absl::StrAppend(&s, "if [ -d ", ShellQuote(b.host), " ]; then mkdir -p ", target,
                    "; else mkdir -p \"$(dirname ", target, ")\"; [ -e ", target, " ] || touch ",
                    target, "; fi\n", "mount --bind ", ShellQuote(b.host), " ", target, "\n");
    if (b.read_only) absl::StrAppend(&s, "mount -o remount,ro,bind ", target, "\n");
  }
  absl::StrAppend(&s, "touch \"$R/run/lazaret/bin/lazaret-sandbox-init\"\n", "mount --bind ",
                  ShellQuote(LAZARET_SANDBOX_INIT_BIN),
                  " \"$R/run/lazaret/bin/lazaret-sandbox-init\"\n",
                  "cat > \"$R/tmp/agent.sh\" <<'LAZARET_AGENT_EOF'\n", script,
                  "\nLAZARET_AGENT_EOF\n", "set +e\n");
  std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                  "HOME=/root",
                                  "GIT_AUTHOR_NAME=Agent",
                                  "GIT_AUTHOR_EMAIL=agent@sandbox",
                                  "GIT_COMMITTER_NAME=Agent",
                                  "GIT_COMMITTER_EMAIL=agent@sandbox"};
  for (const auto& e : plan.env) env.push_back(absl::StrCat(e.name, "=", e.value));
  std::vector<std::string> init = {"/run/lazaret/bin/lazaret-sandbox-init"};
  init.insert(init.end(), plan.init_args.begin(), plan.init_args.end());
  std::vector<std::string> quoted;
  for (const auto& a : init) quoted.push_back(ShellQuote(a));
  for (const auto& e : env) quoted.push_back(ShellQuote(e));
  absl::StrAppend(
      &s, "chroot \"$R\" ", quoted[0], " ",
      absl::StrJoin(quoted.begin() + 1, quoted.begin() + 1 + plan.init_args.size(), " "),
      " -- /usr/bin/env -i ",
      absl::StrJoin(quoted.begin() + 1 + plan.init_args.size(), quoted.end(), " "),
      " /bin/bash -c 'cd /workspace && . /tmp/agent.sh'\n");
  const std::string setup = absl::StrCat(base_, "/sandbox.sh");
  std::ofstream(setup) << s;
  return Sh(absl::StrCat("unshare -m --propagation private bash ", ShellQuote(setup)));
}

bool GitShadowTest::CanEmulateSandbox() {
  return geteuid() == 0 && Sh("unshare -m --propagation private true").code == 0;
}

std::vector<std::string> Describe(const std::vector<Mount>& mounts) {
  std::vector<std::string> out;
  for (const Mount& m : mounts) {
    if (const auto* t = std::get_if<TmpfsMount>(&m)) {
      out.push_back(absl::StrCat("tmpfs ", t->container));
    } else {
      const auto& b = std::get<BindMount>(m);
      out.push_back(absl::StrCat(b.read_only ? "ro " : "rw ", b.host, " ", b.container));
    }
  }
  return out;
}

}  // namespace lazaret::cli::gitshadow
