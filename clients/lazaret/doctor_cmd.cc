// `lazaret doctor [--json]`: the front-end of the host checks
// (doctor/checks.h). Runs in the user's terminal and changes nothing.
// Prints each finding as it comes, or with --json one JSON object once all
// are known (doctor/report_json.h); exits 1 when any check fails (warnings
// do not fail), with or without --json.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "clients/lazaret/cli.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/doctor/checks.h"
#include "clients/lazaret/doctor/report_json.h"
#include "clients/lazaret/help/help.h"
#include "services/vocab/escape.h"

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
  // The detail may hold a host program's error line: escaped like every
  // text a terminal shows that Lazaret did not write itself.
  std::printf("%s  %-22s %s\n", tag, vocab::EscapeForDisplay(f.what).c_str(),
              vocab::EscapeForDisplay(f.detail).c_str());
  if (f.verdict != Verdict::kOk && !f.fix.empty()) {
    std::printf("      fix: %s\n", vocab::EscapeForDisplay(f.fix).c_str());
  }
  std::fflush(stdout);
  if (f.verdict == Verdict::kFail) ++tally->failures;
  if (f.verdict == Verdict::kWarn) ++tally->warnings;
}

}  // namespace

int CmdDoctor(const Context& ctx, const std::vector<std::string>& args) {
  bool json = false;
  if (std::optional<int> exit_code =
          ParseJsonFlag("doctor", args, help::kDoctorHelp, help::kDoctorUsage, &json)) {
    return *exit_code;
  }
  const doctor::HostUser user = doctor::CurrentUser();
  const doctor::CheckOptions options{.runtime_dir = ctx.runtime_dir,
                                     .libexec_dir = ctx.libexec_dir};
  if (json) {
    std::vector<Finding> findings;
    doctor::RunChecks(user, options, [&](const Finding& f) { findings.push_back(f); });
    std::printf("%s\n", doctor::ReportJson(user, findings).c_str());
    return doctor::HostCanRun(findings) ? 0 : 1;
  }
  std::printf("Checking this host for Lazaret (%s, %s):\n", user.name.c_str(),
              user.rootless ? "rootless podman" : "rootful podman");
  Tally tally;
  doctor::RunChecks(user, options, [&](const Finding& f) { Print(f, &tally); });
  if (tally.failures > 0) {
    std::printf("%d problem%s found.\n", tally.failures, tally.failures == 1 ? "" : "s");
    return 1;
  }
  std::printf("This host can run Lazaret%s.\n",
              tally.warnings > 0 ? " (see the warnings above)" : "");
  return 0;
}

}  // namespace lazaret::cli
