// Reading the escalation audit log (one AuditRecord JSON per line, written
// by AuditLog in lazaret-brokerd): for the broker's ReadAudit RPC and for
// `lazaret audit`, so it links protobuf and no gRPC server code. Runs
// unprivileged as the user. The file is the broker's own, but a line is
// still parsed strictly (unknown fields refused) and one that does not
// parse is skipped and counted, never fatal. Strings in the records come
// from sandboxes: print them escaped.
#ifndef LAZARET_SERVICES_BROKERD_AUDIT_READER_H_
#define LAZARET_SERVICES_BROKERD_AUDIT_READER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"

namespace lazaret::brokerd {

// The audit log's path: $LAZARET_AUDIT_LOG when set (tests), else
// $XDG_STATE_HOME/lazaret/audit.jsonl when XDG_STATE_HOME is absolute, else
// <home>/.local/state/lazaret/audit.jsonl ($HOME, or the passwd entry).
std::string DefaultAuditPath();

// The longest line read; a longer one counts as unparsable.
inline constexpr size_t kMaxAuditLineBytes = 4 << 20;

struct AuditScan {
  uint64_t records = 0;                    // lines that parsed (matching the filter or not)
  uint64_t unparsable = 0;                 // lines skipped: not an AuditRecord, or too long
  std::vector<uint64_t> unparsable_lines;  // their 1-based numbers, the first 16
};

// Calls `fn` with every record of `path` for `session_id` (empty: every
// session), oldest first. NOT_FOUND when the file does not exist; a
// symlink or a non-regular file is refused.
absl::StatusOr<AuditScan> ScanAudit(
    const std::string& path, const std::string& session_id,
    const std::function<void(lazaret::approver::v1::AuditRecord)>& fn);

struct AuditRead {
  std::vector<lazaret::approver::v1::AuditRecord> records;  // oldest first
  AuditScan scan;
};

// The last `last` records for `session_id` (0: all), oldest first.
absl::StatusOr<AuditRead> ReadAudit(const std::string& path, const std::string& session_id,
                                    uint32_t last);

// One audit line (no newline) as a record, strictly.
absl::StatusOr<lazaret::approver::v1::AuditRecord> ParseAuditLine(const std::string& line);

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_AUDIT_READER_H_
