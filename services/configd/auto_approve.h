// The auto_approve rule: which commands a user may let the broker run on
// the host without asking. Part of lazaret_config (runs in lazaret-configd
// and the loader fuzzer); the entries are untrusted text (a workspace file
// can carry them).
//
// An entry has one of two forms. A PREFIX entry ("gh pr view", or
// { prefix = "gh pr view" }) is an argument-vector prefix: the broker runs,
// without a prompt, any request whose argv starts with it, whatever the
// agent appends. An EXACT entry ({ exact = "cat /etc/os-release" }) admits
// only a request whose argv equals it.
//
// THE RULE. An entry is judged by the worst command it admits, and it is
// refused when that command could hand the host to the agent. In order:
//   1. Plain text: printable ASCII letters, digits, space, the quotes ' and "
//      and  _ - . , : / = + @ % ^  only. No shell metacharacters, globbing,
//      backslashes, control characters or non-ASCII, even inside quotes
//      (the broker never auto-approves a request containing them, so such
//      an entry could only be a mistake).
//   2. Not a shell builtin (source, ., eval, cd, export, ...): the broker
//      runs no shell.
//   3. Bare command name: argv[0] is a name looked up on the host's PATH,
//      never a path ("./git", "/workspace/bin/git", "bin/x") or an
//      assignment ("A=b cmd"), and does not start with '-' or '.'.
//   4. Not in a refused class (auto_approve_classes.h), matched on argv[0]
//      lowercased, with a version suffix stripped (python3.11 -> python,
//      gcc-12 -> gcc), and also on the part before its first '.'
//      (vim.basic -> vim, cat.sh -> cat) and after its last '-' or '_'
//      (x86_64-linux-gnu-gcc -> gcc, x-cat -> cat), so a renamed or
//      packaged variant of a refused program is refused too:
//      - runners of code or shells (also indirect: wrappers, tools with
//        program-running options, build tools, dotfile managers, keystroke
//        injectors, settings that run commands later, ...) and programs
//        that signal or control other processes: always refused;
//      - writers and readers of arbitrary paths: refused as prefix entries
//        (the agent appends the path); accepted as exact entries whose
//        every argument that is not an option (does not start with '-') is
//        an absolute path or an http(s) URL, and whose option values after
//        '=' that look like paths are absolute too (a relative path would
//        resolve in the agent-writable workspace, the broker's working
//        directory). When the configuration is loaded, an exact entry's
//        absolute paths must also lie outside the workspace and data_root
//        (CheckAutoApprovePaths in resolve.h).
//   5. Named subcommand: multi-purpose cloud CLIs (gh, aws, gcloud, az,
//      glab) are accepted only with a subcommand that runs no local code
//      ("aws sts get-caller-identity", not "aws" or "aws configure").
// A one-word prefix entry is accepted with a warning (any arguments follow).
#ifndef LAZARET_SERVICES_CONFIGD_AUTO_APPROVE_H_
#define LAZARET_SERVICES_CONFIGD_AUTO_APPROVE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::config {

enum class EntryForm { kPrefix, kExact };

// An accepted entry: its text as written, its argv (POSIX shell words) and
// whether it admits only that argv.
struct CommandPrefix {
  std::string text;
  std::vector<std::string> argv;
  bool exact = false;

  bool operator==(const CommandPrefix&) const = default;
};

// Applies the rule above to an entry of the given form. On refusal returns
// InvalidArgument whose message names the class or rule that failed and
// why. Warnings for accepted entries are appended to `warnings` (may be
// null).
absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry, EntryForm form,
                                                    std::vector<std::string>* warnings);
// The prefix form.
absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry,
                                                    std::vector<std::string>* warnings);

// True when the accepted entry admits a request with this argv: equal for
// an exact entry, an element-wise prefix of it otherwise.
bool EntryAdmits(const CommandPrefix& entry, const std::vector<std::string>& argv);

// True when every request `narrow` admits, `wide` admits too (the
// workspace narrowing rule): an exact entry covers only the same exact
// entry; a prefix entry covers each entry, of either form, that it is a
// prefix of.
bool EntryCovers(const CommandPrefix& wide, const CommandPrefix& narrow);

// True when `prefix` is an element-wise prefix of `argv`.
bool IsArgvPrefix(const std::vector<std::string>& prefix, const std::vector<std::string>& argv);

// argv[0] lowercased with a trailing version suffix removed
// ("python3.11" -> "python", "gcc-12" -> "gcc", "pip3" -> "pip").
std::string NormalizeCommandName(absl::string_view name);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_AUTO_APPROVE_H_
