// The path check of the operand rule (services/vocab/auto_approve.h): a
// word that an auto_approve entry admits may not name an existing path
// that leads out of the request's working directory. Runs in
// lazaret-brokerd (no capabilities). The words come from the agent and are
// trusted for nothing; the directory descriptor is the CheckedCommand's,
// opened inside the workspace without following symlinks.
//
// The check resolves the word with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS) from that descriptor, so the kernel, not a string
// comparison, decides whether a symlink (absolute, or through "..") leaves
// it. It is stricter than "leaves the workspace": a symlink from the
// working directory to a sibling directory of the workspace is refused too.
// It cannot hold across time: the agent may replace a file by a symlink
// after the check and before the command opens it. That is why programs
// that read or write the paths their operands name stay refused as prefix
// entries by the listing rule; this check narrows what an entry of another
// program can be made to touch.
#ifndef LAZARET_SERVICES_BROKERD_COMMAND_OPERAND_PATHS_H_
#define LAZARET_SERVICES_BROKERD_COMMAND_OPERAND_PATHS_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "services/vocab/auto_approve.h"

namespace lazaret::brokerd::command {

// Why `word` names a path that leaves `dir_fd` (a symlink out, a magic
// link, a loop) or that cannot be checked (no openat2, permission denied, a
// name too long, any other error); nullopt when it names nothing or a path
// beneath `dir_fd`. "Names nothing" includes ENOENT and ENOTDIR.
std::optional<std::string> OperandPathRefusal(int dir_fd, absl::string_view word);

// The check Judge takes, bound to `dir_fd`, which must outlive it.
vocab::OperandPathCheck OperandsBeneath(int dir_fd);

}  // namespace lazaret::brokerd::command

#endif  // LAZARET_SERVICES_BROKERD_COMMAND_OPERAND_PATHS_H_
