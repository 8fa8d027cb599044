// `lazaret doctor`: the front-end of the host checks (doctor/checks.h).
// Runs in the user's terminal and changes nothing. Prints each finding as
// it comes; exits 1 when any check fails (warnings do not fail).
#include <cstdio>
#include <string>
#include <vector>

#include "clients/lazaret/commands.h"
#include "clients/lazaret/doctor/checks.h"

namespace lazaret::cli {
namespace {

using doctor::Finding;
using doctor::Verdict;

struct Tally {
  int failures = 0;
  int warnings = 0;
};

void Print(const Finding& f, Tally* tally) {
  const char* tag = f.verdict == Verdict::kOk     ? "ok  "
                    : f.verdict == Verdict::kWarn ? "warn"
                                                  : "FAIL";
  std::printf("%s  %-22s %s\n", tag, f.what.c_str(), f.detail.c_str());
  if (f.verdict != Verdict::kOk && !f.fix.empty()) std::printf("      fix: %s\n", f.fix.c_str());
  if (f.verdict == Verdict::kFail) ++tally->failures;
  if (f.verdict == Verdict::kWarn) ++tally->warnings;
}

}  // namespace

int CmdDoctor(const Context& ctx, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "lazaret doctor: unexpected argument '%s'\nusage: lazaret doctor\n",
                 args[0].c_str());
    return 2;
  }
  const doctor::HostUser user = doctor::CurrentUser();
  std::printf("Checking this host for Lazaret (%s, %s):\n", user.name.c_str(),
              user.rootless ? "rootless podman" : "rootful podman");
  Tally tally;
  doctor::RunChecks(user, {.runtime_dir = ctx.runtime_dir, .libexec_dir = ctx.libexec_dir},
                    [&](const Finding& f) { Print(f, &tally); });
  if (tally.failures > 0) {
    std::printf("%d problem%s found.\n", tally.failures, tally.failures == 1 ? "" : "s");
    return 1;
  }
  std::printf("This host can run Lazaret%s.\n",
              tally.warnings > 0 ? " (see the warnings above)" : "");
  return 0;
}

}  // namespace lazaret::cli
