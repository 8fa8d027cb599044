// `lazaret audit [--session ID] [--last N] [--json]`: the host commands
// sandboxes asked for and how each was decided (docs/operations.md,
// docs/escalation.md). Runs in the user's terminal, as the user, on the host
// only. This front-end parses the arguments and prints; the reading and the
// escaping are lazaret_escalation_cli's (clients/lazaret/escalation/).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "clients/lazaret/commands.h"
#include "clients/lazaret/escalation/audit_command.h"
#include "clients/lazaret/escalation/audit_log.h"
#include "clients/lazaret/escalation/broker_client.h"

namespace lazaret::cli {
namespace {

void WriteText(std::FILE* f, absl::string_view s) {
  std::fwrite(s.data(), 1, s.size(), f);
  std::fflush(f);
}

std::optional<std::string> Getenv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace

int CmdAudit(const Context& ctx, const std::vector<std::string>& args) {
  absl::StatusOr<escalation::AuditArgs> parsed = escalation::ParseAuditArgs(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "lazaret audit: %s\n%s", std::string(parsed.status().message()).c_str(),
                 escalation::kAuditUsage);
    return escalation::kAuditExitUsage;
  }
  if (parsed->help) {
    std::fputs(escalation::kAuditHelp, stdout);
    return escalation::kAuditExitOk;
  }
  escalation::BrokerClient broker(escalation::BrokerSocket(ctx.runtime_dir));
  escalation::AuditOutput output{.out = [](absl::string_view s) { WriteText(stdout, s); },
                                 .err = [](absl::string_view s) { WriteText(stderr, s); }};
  return escalation::RunAudit(*parsed, broker, escalation::AuditLogPath(Getenv), output);
}

}  // namespace lazaret::cli
