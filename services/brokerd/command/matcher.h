// Deciding whether a request may run without asking a human (SPEC 5.3.1).
// Runs in lazaret-brokerd (no capabilities). The request text and argv come
// from the agent and are trusted for nothing; the entries come from the
// resolved configuration (already judged by lazaret::config's listing
// rule, services/vocab/auto_approve.h) and were resolved on the host at
// session start (entries.h). Plain structs only, so the libFuzzer build
// compiles it without gRPC.
#ifndef LAZARET_SERVICES_BROKERD_COMMAND_MATCHER_H_
#define LAZARET_SERVICES_BROKERD_COMMAND_MATCHER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "services/brokerd/command/resolve.h"
#include "services/vocab/auto_approve.h"

namespace lazaret::brokerd::command {

// An auto_approve entry as the session holds it.
struct AutoApproveEntry {
  std::vector<std::string> argv;
  // true: the request's argv must equal argv; false: argv is a prefix
  // followed by plain operands and the listed options.
  bool exact = false;
  // The options a prefix entry admits (vocab::FollowingWordsRefusal).
  std::vector<std::string> options;
  // The entry as written, for the audit.
  std::string text;
  // What argv[0] resolved to at session start.
  ResolvedBinary binary;
};

struct Judgement {
  bool auto_approved = false;
  // The entry that approved it (its text), when auto_approved.
  std::string entry_text;
  // Why not, naming the first check that failed, when !auto_approved.
  std::string reason_not_auto;
};

// Auto-approves only when every check holds, in this order:
//   1. the text - `command_text` when the request sent one, else every
//      element of `argv` - has no shell metacharacter, quote, backslash,
//      control character (tab, LF and CR included), NUL or non-ASCII byte
//      (ScanText finds nothing); the justification is not judged;
//   2. `command_text`, when given, splits by POSIX shell words into exactly
//      `argv`;
//   3. argv[0] is a bare command name (not a path, not VAR=value);
//   4. some entry's argv is an element-wise prefix of argv (an exact entry:
//      equal to it), and for a prefix entry every word after it is a plain
//      operand or an option the entry lists (the operand rule,
//      services/vocab/auto_approve.h) and `paths` admits each of them
//      (and the value of each "--opt=VALUE");
//   5. `binary` (argv[0] resolved now) is the same file (st_dev, st_ino) as
//      that entry's argv[0] was at session start.
// An entry with an empty argv never matches. When no prefix entry admits
// the words after it, the reason is the one of the entry that admitted the
// most of them (on a tie the longer entry, then the one listing more
// options), naming the first word that failed and why. An empty `paths` refuses
// every word after a prefix entry (the paths cannot be checked).
Judgement Judge(absl::string_view command_text, const std::vector<std::string>& argv,
                const ResolvedBinary& binary, const std::vector<AutoApproveEntry>& entries,
                const vocab::OperandPathCheck& paths);

}  // namespace lazaret::brokerd::command

#endif  // LAZARET_SERVICES_BROKERD_COMMAND_MATCHER_H_
