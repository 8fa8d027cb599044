#include "services/common/capabilities.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace lazaret::caps {
namespace {

TEST(CapabilitiesTest, NamesDropThePrefixAndUppercase) {
  EXPECT_EQ(Name(CAP_NET_ADMIN), "NET_ADMIN");
  EXPECT_EQ(Name(CAP_SYS_ADMIN), "SYS_ADMIN");
}

TEST(CapabilitiesTest, MaskMatchesProcStatusBitLayout) {
  EXPECT_EQ(Mask({}), 0u);
  EXPECT_EQ(Mask({CAP_NET_ADMIN}), uint64_t{1} << 12);
  EXPECT_EQ(Mask({CAP_CHOWN, CAP_SYS_ADMIN}), (uint64_t{1} << 0) | (uint64_t{1} << 21));
}

uint64_t ProcField(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0)
      return std::stoull(line.substr(field.size() + 1), nullptr, 16);
  }
  return ~uint64_t{0};
}

// Runs `body` in a forked child (capability changes are irreversible) and
// returns its exit status; the child exits 0 when every check held.
template <typename F>
int InChild(F body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

TEST(CapabilitiesTest, DropLeavesExactlyTheDeclaredSetAndNoNewPrivs) {
  const bool root = geteuid() == 0;
  EXPECT_EQ(InChild([&] {
              auto r = DropToDeclared({.required = {CAP_NET_ADMIN}, .delegated = {}});
              if (!r.ok()) return 1;
              if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return 2;
              const uint64_t want = root ? Mask({CAP_NET_ADMIN}) : 0;
              if (ProcField("CapPrm") != want || ProcField("CapEff") != want) return 3;
              if (ProcField("CapInh") != 0 || ProcField("CapAmb") != 0) return 4;
              if (root && ProcField("CapBnd") != want) return 5;
              return 0;
            }),
            0);
}

TEST(CapabilitiesTest, EmptyDeclarationEmptiesEverySetWhenRoot) {
  EXPECT_EQ(InChild([&] {
              auto r = DropToDeclared({});
              if (!r.ok()) return 1;
              if (ProcField("CapPrm") != 0 || ProcField("CapEff") != 0) return 2;
              if (geteuid() == 0 && ProcField("CapBnd") != 0) return 3;
              return 0;
            }),
            0);
}

TEST(CapabilitiesTest, DelegatedCapabilitiesArePermittedButNotEffective) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to hold CAP_SYS_ADMIN";
  EXPECT_EQ(InChild([&] {
              auto r = DropToDeclared({.required = {}, .delegated = {CAP_SYS_ADMIN}});
              if (!r.ok()) return 1;
              if (ProcField("CapPrm") != Mask({CAP_SYS_ADMIN})) return 2;
              if (ProcField("CapEff") != 0) return 3;
              return 0;
            }),
            0);
}

TEST(CapabilitiesTest, UnavailableDeclaredCapabilityIsReportedMissing) {
  EXPECT_EQ(InChild([&] {
              // First drop everything, then declare something we no longer have.
              if (!DropToDeclared({}).ok()) return 1;
              auto r = DropToDeclared({.required = {CAP_NET_ADMIN}, .delegated = {}});
              if (!r.ok()) return 2;
              if (r->missing.size() != 1 || r->missing[0] != CAP_NET_ADMIN) return 3;
              if (!r->held.empty()) return 4;
              return 0;
            }),
            0);
}

// The capability sets of a program this process execs, read from its
// /proc/self/status.
uint64_t ExecedProgramField(const std::string& field) {
  int fds[2];
  if (pipe(fds) != 0) return ~uint64_t{0};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    execl("/bin/cat", "cat", "/proc/self/status", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) text.append(buf, n);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  const size_t at = text.find("\n" + field + ":");
  if (at == std::string::npos) return ~uint64_t{0};
  return std::stoull(text.substr(at + field.size() + 2), nullptr, 16);
}

TEST(CapabilitiesTest, GrantedByExecKeepsNothingHereAndHandsExactlyTheListToARootExec) {
  const bool root = geteuid() == 0;
  const uint64_t grant = Mask({CAP_CHOWN, CAP_KILL});
  EXPECT_EQ(
      InChild([&] {
        auto r = DropToDeclared({.required = {},
                                 .delegated = {},
                                 .granted_by_exec = std::vector<cap_value_t>{CAP_KILL, CAP_CHOWN}});
        if (!r.ok()) return 1;
        if (!r->held.empty()) return 2;
        if (ProcField("CapPrm") != 0 || ProcField("CapEff") != 0) return 3;
        if (ProcField("CapInh") != 0 || ProcField("CapAmb") != 0) return 4;
        // Setuid and root's exec rule must keep working for podman and newuidmap.
        if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 0) return 5;
        if (root && ProcField("CapBnd") != grant) return 6;
        // As root, the exec'd program gets exactly the list, not root's full set.
        if (root && ExecedProgramField("CapPrm") != grant) return 7;
        if (!root && ExecedProgramField("CapPrm") != 0) return 8;
        return 0;
      }),
      0);
}

TEST(CapabilitiesTest, GrantedByExecRefusesOwnCapabilitiesAndAnInheritedNoNewPrivs) {
  EXPECT_EQ(InChild([&] {
              auto mixed = DropToDeclared({.required = {CAP_KILL},
                                           .delegated = {},
                                           .granted_by_exec = std::vector<cap_value_t>{}});
              if (mixed.ok() || mixed.status().code() != absl::StatusCode::kInvalidArgument) {
                return 1;
              }
              if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 2;
              auto r = DropToDeclared(
                  {.required = {}, .delegated = {}, .granted_by_exec = std::vector<cap_value_t>{}});
              if (r.ok() || r.status().code() != absl::StatusCode::kFailedPrecondition) return 3;
              if (r.status().message().find("no_new_privs") == std::string::npos) return 4;
              return 0;
            }),
            0);
}

}  // namespace
}  // namespace lazaret::caps
