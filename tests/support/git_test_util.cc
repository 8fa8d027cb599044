#include "tests/support/git_test_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

namespace lazaret::test {

std::string TrimTrailing(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool PathExists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

CommandResult Sh(const std::string& script) { return Run({"bash", "-c", script}); }

std::string HostGit(const std::string& dir, const std::string& args) {
  CommandResult r = Sh("cd " + ShellQuote(dir) +
                       " && git -c user.name=Dev -c user.email=dev@example.com "
                       "-c init.defaultBranch=main -c protocol.file.allow=always " +
                       args);
  EXPECT_EQ(r.exit_code, 0) << "git " << args << " in " << dir << ":\n" << r.out << r.err;
  return TrimTrailing(r.out);
}

std::string HostRepoState(const std::string& repo) {
  const std::string common = HostGit(repo, "rev-parse --path-format=absolute --git-common-dir");
  const std::string own = HostGit(repo, "rev-parse --path-format=absolute --git-dir");
  return Sh("cd " + ShellQuote(common) +
            " && sha256sum config packed-refs shallow 2>/dev/null; cd " + ShellQuote(own) +
            " && sha256sum HEAD index 2>/dev/null; cd " + ShellQuote(common) +
            " && find hooks info modules logs -type f -not -path 'logs/refs/heads/lazaret/*' "
            "2>/dev/null | sort | xargs -r sha256sum; find hooks -printf '%p %m\\n' | sort; "
            "git --git-dir=. for-each-ref --format='%(objectname) %(refname)' | "
            "grep -v ' refs/heads/lazaret/'")
      .out;
}

std::set<std::string> HostObjects(const std::string& repo) {
  std::set<std::string> out;
  std::istringstream in(
      HostGit(repo, "cat-file --batch-all-objects --batch-check='%(objectname)'"));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

}  // namespace lazaret::test
