// `lazaret doctor --json`: the findings of the host checks (checks.h) as
// one JSON object. Runs in the user's terminal, as the user. A finding's
// detail carries what host programs printed (an error line of podman or
// runsc), which is only quoted (json_writer.h), never trusted.
#ifndef LAZARET_CLIENTS_LAZARET_DOCTOR_REPORT_JSON_H_
#define LAZARET_CLIENTS_LAZARET_DOCTOR_REPORT_JSON_H_

#include <string>
#include <vector>

#include "clients/lazaret/doctor/checks.h"

namespace lazaret::cli::doctor {

// "ok", "warn" or "fail".
const char* VerdictName(Verdict v);

// True when no finding is a failure (warnings do not fail): the host can
// run Lazaret, and `lazaret doctor` exits 0.
bool HostCanRun(const std::vector<Finding>& findings);

// {"ok": HostCanRun, "user": name, "rootless": bool, "failures": N,
//  "warnings": N, "checks": [{"name", "status", "detail", "fix"}...]},
// the checks in the order they ran; "fix" is "" when there is none.
// Names stable (docs/operations.md).
std::string ReportJson(const HostUser& user, const std::vector<Finding>& findings);

}  // namespace lazaret::cli::doctor

#endif  // LAZARET_CLIENTS_LAZARET_DOCTOR_REPORT_JSON_H_
