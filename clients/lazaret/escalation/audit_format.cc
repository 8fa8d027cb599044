#include "clients/lazaret/escalation/audit_format.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "services/spawn/command_line.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::escalation {
namespace {

namespace apb = ::lazaret::approver::v1;
using vocab::EscapeForTerminal;

// Each word quoted for a shell first, then escaped: the quoting shows where
// a word with blanks ends, the escaping that no byte reaches the terminal
// raw.
std::string QuotedArgv(const google::protobuf::RepeatedPtrField<std::string>& argv) {
  std::vector<std::string> words;
  for (const std::string& a : argv) words.push_back(EscapeForTerminal(ShellQuote(a)));
  return absl::StrJoin(words, " ");
}

std::string Who(const apb::AuditRecord& r) {
  const apb::Approver& a = r.approver();
  std::string name = a.name().empty() ? std::string("?") : EscapeForTerminal(a.name());
  if (!a.tty().empty()) absl::StrAppend(&name, "@", EscapeForTerminal(a.tty()));
  return name;
}

std::string WithReason(const char* what, const apb::AuditRecord& r) {
  if (r.reason().empty()) return what;
  return absl::StrCat(what, ": ", EscapeForTerminal(r.reason()));
}

}  // namespace

std::string DecisionText(const apb::AuditRecord& r) {
  switch (r.decision()) {
    case apb::AuditRecord::DECISION_AUTO_APPROVED:
      return absl::StrCat("auto:", EscapeForTerminal(r.auto_approve_entry()));
    case apb::AuditRecord::DECISION_APPROVED:
      return absl::StrCat("approved by ", Who(r));
    case apb::AuditRecord::DECISION_EDITED:
      return absl::StrCat("edited by ", Who(r), " (asked: ",
                          r.argv().empty() ? EscapeForTerminal(r.command()) : QuotedArgv(r.argv()),
                          ")");
    case apb::AuditRecord::DECISION_DENIED:
      return WithReason("denied", r);
    case apb::AuditRecord::DECISION_ABORTED:
      return WithReason("aborted", r);
    case apb::AuditRecord::DECISION_EXPIRED:
      return "expired";
    case apb::AuditRecord::DECISION_REFUSED:
      return WithReason("refused", r);
    default:
      return absl::StrCat("decision ", static_cast<int>(r.decision()));
  }
}

std::string ArgvText(const apb::AuditRecord& r) {
  if (!r.ran_argv().empty()) return QuotedArgv(r.ran_argv());
  if (!r.argv().empty()) return QuotedArgv(r.argv());
  if (!r.command().empty()) return EscapeForTerminal(r.command());
  return "(no command)";
}

std::string DurationText(uint64_t ms) {
  if (ms < 1000) return absl::StrCat(ms, " ms");
  if (ms < 60000) return absl::StrCat(ms / 1000, ".", ms % 1000 / 100, " s");
  return absl::StrCat(ms / 60000, " min ", ms % 60000 / 1000, " s");
}

std::string AuditTextLine(const apb::AuditRecord& r) {
  std::vector<std::string> fields = {
      EscapeForTerminal(r.time()),
      EscapeForTerminal(r.session_id()),
      DecisionText(r),
      ArgvText(r),
  };
  if (r.phase() == apb::AuditRecord::PHASE_STARTED) {
    // Written before the command started; readers merge it with its end,
    // so alone it means no end was recorded.
    fields.push_back("started, no end recorded");
  } else if (!r.ran()) {
    fields.push_back("not run");
  } else if (r.timed_out()) {
    fields.push_back(absl::StrCat("timed out (exit ", r.exit_code(), ")"));
  } else {
    fields.push_back(absl::StrCat("exit ", r.exit_code()));
  }
  fields.push_back(DurationText(r.duration_ms()));
  if (r.stdout_truncated()) {
    fields.push_back(absl::StrCat("stdout truncated (", r.stdout_bytes(), " bytes)"));
  }
  if (r.stderr_truncated()) {
    fields.push_back(absl::StrCat("stderr truncated (", r.stderr_bytes(), " bytes)"));
  }
  if (!r.truncated_bytes().empty()) {
    std::vector<std::string> cut;
    for (const auto& [name, full] : r.truncated_bytes()) {
      cut.push_back(absl::StrCat(EscapeForTerminal(name), " (",
                                 absl::EndsWith(name, "[]") ? "words dropped: " : "bytes: ", full,
                                 ")"));
    }
    std::sort(cut.begin(), cut.end());
    fields.push_back(absl::StrCat("cut to fit the log: ", absl::StrJoin(cut, ", ")));
  }
  return absl::StrCat(absl::StrJoin(fields, "  "), "\n");
}

absl::StatusOr<std::string> AuditJsonLine(const apb::AuditRecord& r) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  std::string out;
  if (auto s = google::protobuf::util::MessageToJsonString(r, &out, o); !s.ok()) {
    return absl::InternalError(std::string(s.message()));
  }
  out.push_back('\n');
  return out;
}

}  // namespace lazaret::cli::escalation
