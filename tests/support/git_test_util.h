// Host-side git scaffolding shared by the Git Shadow tests: run git as the
// developer would, and fingerprint everything of a host repository that a
// sandbox must never change.
#ifndef LAZARET_TESTS_SUPPORT_GIT_TEST_UTIL_H_
#define LAZARET_TESTS_SUPPORT_GIT_TEST_UTIL_H_

#include <set>
#include <string>

#include "tests/support/test_support.h"

namespace lazaret::test {

// `s` without trailing newlines and spaces.
std::string TrimTrailing(std::string s);

// True when something (even a dangling symlink) is at `path`.
bool PathExists(const std::string& path);

// bash -c SCRIPT (test scaffolding only).
CommandResult Sh(const std::string& script);

// git ARGS in `dir` with a fixed identity, as the developer; a failure is a
// test failure. Returns trimmed stdout.
std::string HostGit(const std::string& dir, const std::string& args);

// One comparable text of config, hooks (content and modes), HEAD, index,
// packed-refs, shallow, info/ and modules/ files, every reflog and every
// ref outside refs/heads/lazaret/.
std::string HostRepoState(const std::string& repo);

// Every object id in the repository's own object database.
std::set<std::string> HostObjects(const std::string& repo);

}  // namespace lazaret::test

#endif  // LAZARET_TESTS_SUPPORT_GIT_TEST_UTIL_H_
