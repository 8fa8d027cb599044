// Finding the host program a request names. Runs in lazaret-brokerd (no
// capabilities). The name comes from the agent and is trusted for nothing;
// the search path is the broker's own, never the request's or the user's
// environment.
#ifndef LAZARET_SERVICES_BROKERD_COMMAND_RESOLVE_H_
#define LAZARET_SERVICES_BROKERD_COMMAND_RESOLVE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::brokerd::command {

// The only PATH a host command is looked up on, and the PATH it runs with.
inline constexpr char kBrokerPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// A program found on the PATH: its canonical path (realpath, so symlinks
// such as /usr/bin/vi -> /etc/alternatives/vi are resolved) and the file's
// identity, which a later lookup of the same name is compared with.
struct ResolvedBinary {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;

  bool SameFile(const ResolvedBinary& other) const { return dev == other.dev && ino == other.ino; }
};

// Checks that `name` is a bare command name - not empty, printable ASCII
// without space, no '/', not starting with '-' or '.', no '=' - and looks
// it up on `search_path` (colon-separated absolute directories; a relative
// or empty entry is skipped, never the current directory): the first entry
// where name is a regular file with an execute bit wins. InvalidArgument
// for a name that is not a bare command name ("argv[0] must be a command
// name, not a path"), NotFound when no entry has it ("'x' is not a command
// on the host's PATH (...)").
absl::StatusOr<ResolvedBinary> ResolveCommandName(absl::string_view name,
                                                  absl::string_view search_path = kBrokerPath);

// The checks on `name` alone, without a lookup.
absl::Status CheckCommandName(absl::string_view name);

}  // namespace lazaret::brokerd::command

#endif  // LAZARET_SERVICES_BROKERD_COMMAND_RESOLVE_H_
