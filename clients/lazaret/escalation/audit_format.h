// The text form of audit records for `lazaret audit`: one line per record.
// Runs in the `lazaret` CLI, on the user's terminal. A record is written by
// the broker but holds the agent's text (argv, command, justification) and
// approver-declared names, so every field is escaped on the way out
// (config/terminal_text.h): no byte of a record can move the cursor,
// recolour or hide part of a line.
#ifndef LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_FORMAT_H_
#define LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_FORMAT_H_

#include <string>

#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"

namespace lazaret::cli::escalation {

// How the request was decided: "auto:ENTRY", "approved by NAME@TTY",
// "edited by NAME@TTY (asked: ARGV)", "denied: REASON", "aborted: REASON",
// "expired", "refused: REASON". Escaped.
std::string DecisionText(const ::lazaret::approver::v1::AuditRecord& record);

// The argv that ran (after an edit, the edited one; when nothing ran, the
// one asked for, or the command text as sent), shell-quoted and escaped.
std::string ArgvText(const ::lazaret::approver::v1::AuditRecord& record);

// "12 ms", "3.4 s", "2 min 5 s".
std::string DurationText(uint64_t ms);

// One line, with its newline:
//   TIME  SESSION  DECISION  ARGV  exit N|timed out|not run  DURATION[  MARKS]
// MARKS: "stdout truncated (N bytes)", "stderr truncated (N bytes)".
std::string AuditTextLine(const ::lazaret::approver::v1::AuditRecord& record);

// The record's JSON line as the broker writes it (proto field names), with
// its newline.
absl::StatusOr<std::string> AuditJsonLine(const ::lazaret::approver::v1::AuditRecord& record);

}  // namespace lazaret::cli::escalation

#endif  // LAZARET_CLIENTS_LAZARET_ESCALATION_AUDIT_FORMAT_H_
