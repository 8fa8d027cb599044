#include "clients/lazaret/escalation/audit_command.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "clients/lazaret/escalation/audit_format.h"
#include "clients/lazaret/escalation/audit_log.h"
#include "services/common/session_id.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::escalation {
namespace {

namespace apb = ::lazaret::approver::v1;
using vocab::EscapeForTerminal;

// The value of `--name value` or `--name=value` at args[*i], advancing *i
// past it; nullopt when args[*i] is not that flag.
absl::StatusOr<std::optional<std::string>> FlagValue(const std::vector<std::string>& args,
                                                     size_t* i, absl::string_view name) {
  absl::string_view a = args[*i];
  if (a == name) {
    if (*i + 1 >= args.size()) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
    }
    ++*i;
    return std::optional<std::string>(args[*i]);
  }
  if (absl::ConsumePrefix(&a, name) && absl::ConsumePrefix(&a, "=")) {
    return std::optional<std::string>(std::string(a));
  }
  return std::optional<std::string>();
}

}  // namespace

absl::StatusOr<AuditArgs> ParseAuditArgs(const std::vector<std::string>& args) {
  AuditArgs out;
  bool have_session = false, have_last = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    if (a == "--json") {
      if (out.json) return absl::InvalidArgumentError("--json given twice");
      out.json = true;
      continue;
    }
    absl::StatusOr<std::optional<std::string>> session = FlagValue(args, &i, "--session");
    if (!session.ok()) return session.status();
    if (session->has_value()) {
      if (have_session) return absl::InvalidArgumentError("--session given twice");
      if (!IsValidSessionId(**session)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--session: '", EscapeForTerminal(session->value().substr(0, 64)),
                         "' is not a session id (12 lowercase hex digits; lazaret ps lists them)"));
      }
      have_session = true;
      out.session = **session;
      continue;
    }
    absl::StatusOr<std::optional<std::string>> last = FlagValue(args, &i, "--last");
    if (!last.ok()) return last.status();
    if (last->has_value()) {
      if (have_last) return absl::InvalidArgumentError("--last given twice");
      uint32_t n = 0;
      if (!absl::SimpleAtoi(**last, &n) || n == 0 || (**last)[0] == '+') {
        return absl::InvalidArgumentError(
            absl::StrCat("--last: '", EscapeForTerminal(last->value().substr(0, 64)),
                         "' is not a number from 1 to 4294967295"));
      }
      have_last = true;
      out.last = n;
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", EscapeForTerminal(a.substr(0, 64)), "'"));
  }
  return out;
}

int RunAudit(const AuditArgs& args, BrokerClient& broker,
             const absl::StatusOr<std::string>& log_path, const AuditOutput& o) {
  bool print_failed = false;
  auto print = [&](const apb::AuditRecord& r, const std::string* json) {
    if (!args.json) {
      o.out(AuditTextLine(r));
    } else if (json != nullptr) {
      o.out(absl::StrCat(*json, "\n"));
    } else if (absl::StatusOr<std::string> line = AuditJsonLine(r); line.ok()) {
      o.out(*line);
    } else {
      print_failed = true;
    }
  };

  size_t received = 0;
  absl::Status from_broker = broker.ReadAudit(
      args.session, args.last, [&](const apb::AuditRecord& r) { print(r, nullptr); }, &received);
  if (from_broker.ok() && !print_failed) return kAuditExitOk;
  const bool fall_back =
      received == 0 && (absl::IsUnavailable(from_broker) || absl::IsUnimplemented(from_broker));
  if (!fall_back) {
    o.err(absl::StrCat(
        "lazaret audit: ",
        print_failed ? "a record could not be printed as JSON" : std::string(from_broker.message()),
        "\n"));
    return kAuditExitFailed;
  }
  if (!log_path.ok()) {
    o.err(absl::StrCat("lazaret audit: ", from_broker.message(), "; and ",
                       log_path.status().message(), "\n"));
    return kAuditExitFailed;
  }
  o.err(absl::StrCat("lazaret audit: lazaret-brokerd ",
                     absl::IsUnavailable(from_broker) ? "is not running" : "cannot read the audit",
                     "; reading ", EscapeForTerminal(*log_path), "\n"));
  absl::Status from_file = ReadAuditFile(
      *log_path, args.session, args.last, [&](const AuditEntry& e) { print(e.record, &e.json); },
      [&](const std::string& problem) {
        o.err(absl::StrCat("lazaret audit: skipped ", EscapeForTerminal(problem), "\n"));
      });
  if (absl::IsNotFound(from_file)) {
    o.err(absl::StrCat("lazaret audit: no audit log yet (", EscapeForTerminal(*log_path),
                       " does not exist)\n"));
    return kAuditExitOk;
  }
  if (!from_file.ok()) {
    o.err(absl::StrCat("lazaret audit: ", EscapeForTerminal(from_file.message()), "\n"));
    return kAuditExitFailed;
  }
  return kAuditExitOk;
}

}  // namespace lazaret::cli::escalation
