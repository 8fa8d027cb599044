// The auto_approve rule: which commands a user may let the broker run on
// the host without asking. Part of lazaret_vocab: runs anywhere
// (lazaret-configd checks entries with it, lazaret-brokerd's matcher judges
// a request's words, the loader fuzzer); the entries are untrusted text (a
// workspace file can carry them).
//
// An entry has one of two forms. A PREFIX entry ("gh pr view", or
// { prefix = "gh pr view", options = ["--json", "--comments"] }) admits a
// request whose argv is the entry's argv followed by PLAIN OPERANDS and the
// options the entry lists (THE OPERAND RULE below). An EXACT entry
// ({ exact = "cat /etc/os-release" }) admits only a request whose argv
// equals it, and lists no options.
//
// THE OPERAND RULE. A word after a prefix entry's argv is admitted when it
//   - is a plain operand: not empty, does not start with '-' or '~', is not
//     absolute, contains no '=', '@' or ":/" (so no "://" URL and no
//     "host:/path"), and has no ".." path component; or
//   - is one of the entry's options, compared exactly (no abbreviation, no
//     bundling: "-rF" is not "-r" and "-F"); or
//   - is a listed option that starts with "--" written with its value,
//     "--json=VALUE", whose VALUE is a plain operand. A single-dash option
//     is written apart from its value (getopt would take "=VALUE" as it).
// The word after a listed option may be its value; it is judged like any
// other word, so it too must be a plain operand or a listed option. "--" is
// an option like any other: admitted only when listed, and the words after
// it are still judged (a word starting with '-' stays refused). On the
// broker, every admitted word (and a VALUE after '=') must also name no
// existing path whose resolution leaves the request's working directory
// (lazaret-brokerd, services/brokerd/command/operand_paths.h).
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
//   5. Options: a prefix entry may not end in an option word without '='
//      ("date -f", "dmesg -F", "tree -o", "ls -l"): the agent's next word
//      could be that option's value. An entry's options list holds option
//      words only (start with '-', no '=', letters, digits, '-', '_', '.'),
//      and neither it nor the entry's own words may name an option of its
//      program that reads or writes a file, loads code, prints secrets or
//      redirects its credentials (RiskyOptionTables(), matched also as a
//      letter of a bundle "-rF" and as an abbreviation "--fil" of a long
//      option). In the entry's own words a file option is accepted only with
//      an absolute value, and a redirecting option with the value written.
//   6. Named subcommand: multi-purpose cloud CLIs (gh, aws, gcloud, az,
//      glab) are accepted only with a subcommand that runs no local code
//      ("aws sts get-caller-identity", not "aws" or "aws configure").
// A one-word prefix entry is accepted with a warning (any arguments follow).
#ifndef LAZARET_SERVICES_VOCAB_AUTO_APPROVE_H_
#define LAZARET_SERVICES_VOCAB_AUTO_APPROVE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

enum class EntryForm { kPrefix, kExact };

// An accepted entry: its text as written, its argv (POSIX shell words) and
// whether it admits only that argv.
struct CommandPrefix {
  std::string text;
  std::vector<std::string> argv;
  bool exact = false;
  // The options a prefix entry admits among its operands (rule 5 checked).
  std::vector<std::string> options;

  bool operator==(const CommandPrefix&) const = default;
};

// Applies the rule above to an entry of the given form. On refusal returns
// InvalidArgument whose message names the class or rule that failed and
// why. Warnings for accepted entries are appended to `warnings` (may be
// null).
absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry, EntryForm form,
                                                    std::vector<std::string>* warnings);
// With an options list (prefix entries only; an exact entry with options
// is refused).
absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry, EntryForm form,
                                                    const std::vector<std::string>& options,
                                                    std::vector<std::string>* warnings);
// The prefix form.
absl::StatusOr<CommandPrefix> CheckAutoApproveEntry(absl::string_view entry,
                                                    std::vector<std::string>* warnings);

// Why `word` is not a plain operand (THE OPERAND RULE), naming it; nullopt
// when it is one.
std::optional<std::string> NotPlainOperand(absl::string_view word);

// Asked about each word the lexical rule admits (and about the VALUE of
// "--opt=VALUE"): why the path it would name is refused, or nullopt.
using OperandPathCheck = std::function<std::optional<std::string>(absl::string_view word)>;

// Why `words` - what follows a prefix entry's argv in a request - are not
// admitted by an entry listing `options`; nullopt when every word is. The
// reason names the first word that failed and why; `failed_at` (may be
// null) is set to that word's index. `path_check` may be null (the lexical
// rule alone).
std::optional<std::string> FollowingWordsRefusal(const std::vector<std::string>& words,
                                                 size_t first,
                                                 const std::vector<std::string>& options,
                                                 const OperandPathCheck* path_check,
                                                 size_t* failed_at = nullptr);

// True when the accepted entry admits a request with this argv by the
// lexical rules: equal for an exact entry; for a prefix entry, an
// element-wise prefix of it followed by words FollowingWordsRefusal
// admits (the broker adds its path check).
bool EntryAdmits(const CommandPrefix& entry, const std::vector<std::string>& argv);

// True when every request `narrow` admits, `wide` admits too (the
// workspace narrowing rule): an exact entry covers only the same exact
// entry; a prefix entry covers an entry of either form whose argv it
// starts and whose further words it admits, when every option `narrow`
// lists is one `wide` lists.
bool EntryCovers(const CommandPrefix& wide, const CommandPrefix& narrow);

// True when `prefix` is an element-wise prefix of `argv`.
bool IsArgvPrefix(const std::vector<std::string>& prefix, const std::vector<std::string>& argv);

// argv[0] lowercased with a trailing version suffix removed
// ("python3.11" -> "python", "gcc-12" -> "gcc", "pip3" -> "pip").
std::string NormalizeCommandName(absl::string_view name);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_AUTO_APPROVE_H_
