// The classes of programs the auto_approve rule refuses (auto_approve.h):
// one table of names per reason, each table in one class, with the reason
// shown to the user. Part of lazaret_vocab (lazaret-configd, lazaret-brokerd,
// the loader fuzzer). Constant data; it judges untrusted entries but reads
// none.
//
// A name in a table is lowercase and normalised (NormalizeCommandName:
// "python", not "python3.11"). The tables are a blacklist of known
// dangerous programs, not a list of safe ones: a program missing from them
// is not thereby safe. Names are in one class only, except that a program
// may be both a reader and a writer of arbitrary paths (curl).
#ifndef LAZARET_SERVICES_VOCAB_AUTO_APPROVE_CLASSES_H_
#define LAZARET_SERVICES_VOCAB_AUTO_APPROVE_CLASSES_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace lazaret::vocab {

enum class EntryClass {
  // Runs code or a shell, also indirectly (a file, a string, a config file
  // or a hook the agent can choose; keystrokes typed into the desktop;
  // settings that make other programs run commands later).
  kRunner,
  // Signals or controls other processes of the user (kill, killall, ...).
  kProcessControl,
  // A shell builtin: the broker runs no shell.
  kBuiltin,
  // Returns the content (or content-derived data) of the files named in
  // its arguments.
  kReader,
  // Writes, moves or removes the files named in its arguments.
  kWriter,
};

// One table: the class, the reason for this table's programs (shown after
// the class: "'bash' is a runner of code or shells: <why>"), and the names.
struct RefusedTable {
  EntryClass cls;
  absl::string_view why;
  std::vector<absl::string_view> names;
};

// Every table: runners first, then process control, builtins, readers,
// writers.
const std::vector<RefusedTable>& RefusedTables();
// The runner tables alone (auto_approve_runners.cc).
const std::vector<RefusedTable>& RunnerTables();

// Name prefixes whose programs are runners ("git-", "ssh-", ...), with the
// reason.
struct RefusedNamePrefix {
  absl::string_view prefix;
  absl::string_view why;
};
const std::vector<RefusedNamePrefix>& RefusedNamePrefixes();

// What an option of an otherwise listable program does with its value
// (rule 5 of auto_approve.h).
enum class OptionRisk {
  // Reads or writes the file its value names (date -f FILE, tree -o FILE,
  // gh api -F body=@FILE).
  kFile,
  // Loads code or a configuration that can run code.
  kCode,
  // Prints secrets: credentials, tokens, signed requests (aws --debug).
  kSecrets,
  // Sends the request, with your credentials, somewhere the value chooses,
  // picks other credentials, or turns a read into a write
  // (aws --endpoint-url, aws --profile, gh api -X).
  kRedirect,
};

// Options of one or more programs (normalised names, as the class tables)
// that carry one risk, with the reason shown to the user ("'-f' of date
// <why>"). Short options are "-x" (also found as a letter of a bundle
// "-rx"); long options "--name" (also found when abbreviated, since getopt
// and argparse accept unambiguous abbreviations).
struct RiskyOptions {
  std::vector<absl::string_view> programs;
  OptionRisk risk;
  absl::string_view why;
  std::vector<absl::string_view> options;
};
const std::vector<RiskyOptions>& RiskyOptionTables();

// The class as named to the user: "runner of code or shells", ...
absl::string_view ClassLabel(EntryClass cls);

// What auto-approving a program of the class would hand the agent; the
// sentence that follows the reason in a refusal (may be empty).
absl::string_view ClassConsequence(EntryClass cls);

// True for the classes an exact entry lifts: the reader and the writer
// classes (an exact entry leaves no free trailing argument to name a path).
bool ExactEntryLifts(EntryClass cls);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_AUTO_APPROVE_CLASSES_H_
