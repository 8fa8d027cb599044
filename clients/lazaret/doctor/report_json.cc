#include "clients/lazaret/doctor/report_json.h"

#include "clients/lazaret/json/json_writer.h"

namespace lazaret::cli::doctor {

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "fail";
  }
  return "fail";
}

bool HostCanRun(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.verdict == Verdict::kFail) return false;
  }
  return true;
}

std::string ReportJson(const HostUser& user, const std::vector<Finding>& findings) {
  int failures = 0;
  int warnings = 0;
  std::vector<std::string> checks;
  checks.reserve(findings.size());
  for (const Finding& f : findings) {
    if (f.verdict == Verdict::kFail) ++failures;
    if (f.verdict == Verdict::kWarn) ++warnings;
    checks.push_back(json::Object()
                         .String("name", f.what)
                         .String("status", VerdictName(f.verdict))
                         .String("detail", f.detail)
                         .String("fix", f.fix)
                         .Text());
  }
  return json::Object()
      .Bool("ok", failures == 0)
      .String("user", user.name)
      .Bool("rootless", user.rootless)
      .Int("failures", failures)
      .Int("warnings", warnings)
      .Raw("checks", json::Array(checks))
      .Text();
}

}  // namespace lazaret::cli::doctor
