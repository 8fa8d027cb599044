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

}  // namespace
}  // namespace lazaret::caps
