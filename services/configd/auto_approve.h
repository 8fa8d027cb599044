// The auto_approve rule: which argv prefixes a user may let the broker run on
// the host without asking. Part of lazaret_config; the entries are untrusted
// text (a workspace file can carry them).
//
// THE RULE. An entry is an argument-vector prefix: the broker runs, without a
// prompt, any request whose argv starts with it, whatever the agent appends.
// So an entry is judged by the worst command it admits, and it is refused
// when some appended arguments could make the host run a program, script or
// code that the agent chose. Concretely, in this order:
//   1. Plain text: printable ASCII letters, digits, space, the quotes ' and "
//      and  _ - . , : / = + @ % ^  only. No shell metacharacters, globbing,
//      backslashes, control characters or non-ASCII, even inside quotes
//      (the broker never auto-approves a request containing them, so such
//      an entry could only be a mistake).
//   2. Bare command name: argv[0] is a name looked up on the host's PATH,
//      never a path ("./git", "/workspace/bin/git", "bin/x") or an
//      assignment ("A=b cmd"), and does not start with '-' or '.'.
//   3. Not a code runner: argv[0] (lowercased, version suffix stripped:
//      python3.11 -> python, gcc-12 -> gcc) is not a program whose job or
//      documented options run other programs or load code: shells,
//      interpreters and language runtimes, command wrappers (env, sudo,
//      xargs, find, timeout, nice, nohup, ...), tools with program-running
//      options (git and every git-*, rg --pre, sed e, tar --to-command,
//      rsync -e, sort --compress-program, ssh, ...), build and test runners
//      and package managers (they run files from the agent-writable
//      workspace), compilers, container/VM/remote runners, schedulers,
//      editors, pagers and openers, and lazaret itself. See kCodeRunners in
//      auto_approve.cc for the table that applies this rule.
//   4. Named subcommand: multi-purpose cloud CLIs (gh, aws, gcloud, az,
//      glab) are accepted only with a subcommand that runs no local code
//      ("aws sts get-caller-identity", not "aws" or "aws configure").
// Programs that write or delete files named in their arguments (curl, cp,
// rm, ...) are accepted with a warning: appended arguments let the agent
// write any file the user can write. A longer prefix is always safer.
#ifndef LAZARET_SERVICES_CONFIGD_AUTO_APPROVE_H_
#define LAZARET_SERVICES_CONFIGD_AUTO_APPROVE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::config {

// An accepted entry: its text and its argv (POSIX shell words).
struct CommandPrefix {
  std::string text;
  std::vector<std::string> argv;
};

// Applies the rule above. On refusal returns InvalidArgument whose message
// names the rule that failed. Warnings for accepted entries are appended to
// `warnings` (may be null).
absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry,
                                                    std::vector<std::string>* warnings);

// True when `prefix` is an element-wise prefix of `argv`.
bool IsArgvPrefix(const std::vector<std::string>& prefix, const std::vector<std::string>& argv);

// argv[0] lowercased with a trailing version suffix removed
// ("python3.11" -> "python", "gcc-12" -> "gcc", "pip3" -> "pip").
std::string NormalizeCommandName(absl::string_view name);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_AUTO_APPROVE_H_
