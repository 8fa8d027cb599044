// `lazaret audit [--session S] [--last N] [--json]` below its front-end
// (audit_cmd.cc): the arguments, where the records come from - brokerd's
// ApproverService.ReadAudit, or the audit log itself when the broker is not
// running - and the printing. Runs in the `lazaret` CLI, on the user's
// terminal. Records hold agent text; the text form escapes every field
// (audit_format.h), --json gives the JSON lines.
#ifndef LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_COMMAND_H_
#define LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_COMMAND_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "clients/lazaret/escalation/broker_client.h"

namespace lazaret::cli::escalation {

inline constexpr int kAuditExitOk = 0;
inline constexpr int kAuditExitFailed = 1;
inline constexpr int kAuditExitUsage = 2;

inline constexpr char kAuditUsage[] = "usage: lazaret audit [--session ID] [--last N] [--json]\n";
inline constexpr char kAuditHelp[] =
    "usage: lazaret audit [--session ID] [--last N] [--json]\n"
    "\n"
    "Every host command a sandbox asked for, oldest first: when the line was\n"
    "written, the session, how it was decided (auto:ENTRY, approved by NAME@TTY,\n"
    "edited, denied: reason, aborted, expired, refused: reason), the argv, and\n"
    "the outcome: for a command that ran, its exit code, how long it took and\n"
    "whether its output was truncated. A command whose end the log does not\n"
    "hold (the broker or the host stopped while it ran, or it still runs) is\n"
    "shown last, as \"started\": the broker records every command before it\n"
    "starts.\n"
    "\n"
    "  --session ID  only this session's requests\n"
    "  --last N      only the last N records\n"
    "  --json        the audit log's JSON lines (approver.v1.AuditRecord)\n"
    "\n"
    "Read through lazaret-brokerd; when it is not running, from the log itself:\n"
    "$LAZARET_AUDIT_LOG, else $XDG_STATE_HOME/lazaret/audit.jsonl, else\n"
    "~/.local/state/lazaret/audit.jsonl, with its rotated files (.1 newest,\n"
    "read first from the oldest).\n";

struct AuditArgs {
  bool help = false;
  std::string session;  // empty: every session
  uint32_t last = 0;    // 0: all
  bool json = false;
};

// --session ID (a session id), --last N (1 or more), --json, -h/--help; each
// at most once, as `--flag value` or `--flag=value`.
absl::StatusOr<AuditArgs> ParseAuditArgs(const std::vector<std::string>& args);

struct AuditOutput {
  std::function<void(absl::string_view)> out;
  std::function<void(absl::string_view)> err;
};

// Prints the records `args` selects. From `broker`; when it is not running
// (UNAVAILABLE) or predates ReadAudit (UNIMPLEMENTED) and sent nothing, from
// the file `log_path` names (an error there is reported). Exit codes:
// kAuditExitOk, or kAuditExitFailed with the reason on `err`.
int RunAudit(const AuditArgs& args, BrokerClient& broker,
             const absl::StatusOr<std::string>& log_path, const AuditOutput& output);

}  // namespace lazaret::cli::escalation

#endif  // LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_COMMAND_H_
