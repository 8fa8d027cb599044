// Reading lazaret-brokerd's audit log (append-only JSONL, one
// approver.v1.AuditRecord JSON per line) directly, for `lazaret audit` when
// the broker is not running. Runs in the `lazaret` CLI, as the user. The
// file is host-written by the broker, but its records carry the agent's
// text: nothing read here is printed unescaped (audit_format.h), a line
// that is not a record is reported and skipped, never guessed at.
#ifndef LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_LOG_H_
#define LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_LOG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lazaret/approver/v1/approver.pb.h"

namespace lazaret::cli::escalation {

// A line longer than this is not a record the broker wrote (a request is at
// most 64 KiB).
inline constexpr size_t kMaxAuditLineBytes = 1 << 20;

// Reads a variable of this process's environment; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The audit log: $LAZARET_AUDIT_LOG, else $XDG_STATE_HOME/lazaret/audit.jsonl,
// else $HOME/.local/state/lazaret/audit.jsonl. Only absolute values count
// (a relative XDG_STATE_HOME is ignored, as the XDG spec says).
absl::StatusOr<std::string> AuditLogPath(const EnvLookup& env);

// One record and its line as written.
struct AuditEntry {
  std::string json;
  ::lazaret::approver::v1::AuditRecord record;
};

// One line parsed as an AuditRecord (fields a newer broker added are
// ignored).
absl::StatusOr<::lazaret::approver::v1::AuditRecord> ParseAuditLine(absl::string_view line);

// The records of the log at `path` - its rotated files path.N .. path.1
// first, then path - oldest first, to `sink`: those of `session` (empty:
// all), a command that ran once (its PHASE_FINISHED line; its
// PHASE_STARTED line alone, after all others, when its end is not in the
// log: brokerd::AuditMerge), and of those the last `last` (0: all). Each line that
// is not a record goes to `problem` with its file and line number and is
// skipped. No file at all is NOT_FOUND; a path that is not a regular file,
// or a symlink, is refused.
absl::Status ReadAuditFile(const std::string& path, const std::string& session, uint32_t last,
                           const std::function<void(const AuditEntry&)>& sink,
                           const std::function<void(const std::string&)>& problem);

}  // namespace lazaret::cli::escalation

#endif  // LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_LOG_H_
