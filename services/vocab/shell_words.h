// POSIX shell-word splitting without any expansion. Part of lazaret_vocab:
// runs anywhere (lazaret-configd splits auto_approve entries with it,
// lazaret-brokerd the commands the sandbox asks for). The input is
// untrusted text.
#ifndef LAZARET_SERVICES_VOCAB_SHELL_WORDS_H_
#define LAZARET_SERVICES_VOCAB_SHELL_WORDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

// Splits `text` into words the way a POSIX shell tokenises a simple command
// (XCU 2.2 and 2.3), with no parameter, command or pathname expansion:
//   - unquoted blanks (space, tab, newline) separate words;
//   - '...' quotes everything literally up to the next ';
//   - "..." quotes everything except \ before $ ` " \ or newline;
//   - an unquoted \ quotes the next character; \<newline> is removed;
//   - an unquoted # at the start of a word starts a comment to end of line.
// An unterminated quote or a trailing backslash is an error. Empty quotes
// produce an empty word ("" -> {""}).
absl::StatusOr<std::vector<std::string>> SplitShellWords(absl::string_view text);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_SHELL_WORDS_H_
