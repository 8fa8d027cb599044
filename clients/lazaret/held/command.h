// `lazaret held`: what sessions of a profile changed in the files host
// programs act on (held in the profile, store.h), shown, diffed against the
// developer's folder, applied or dropped per file (docs/operations.md "Held
// changes"). Runs in the `lazaret` CLI, as the developer. The command body
// works on an explicit profile directory and workspace so that it runs, and
// is tested, without the service set; held_cmd.cc resolves both the way
// `lazaret run` does and checks for live sessions. Everything held came from
// the sandbox: every byte printed goes through display.h, and the only
// write into the folder is Store::Apply, after the developer said yes (or
// gave --yes).
#ifndef LAZARET_CLIENTS_LAZARET_HELD_COMMAND_H_
#define LAZARET_CLIENTS_LAZARET_HELD_COMMAND_H_

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lazaret::cli::held {

struct HeldArgs {
  enum class Verb { kList, kDiff, kApply, kDrop };
  Verb verb = Verb::kList;
  std::string profile;          // list's PROFILE or --profile NAME; empty: the default
  std::string workspace;        // --workspace DIR; empty: the current directory
  std::string explicit_config;  // --config FILE
  std::vector<std::string> paths;
  bool all = false;   // --all (apply, drop)
  bool yes = false;   // --yes (apply, drop)
  bool json = false;  // --json (list)
  bool help = false;
};

extern const char kHeldUsage[];

absl::StatusOr<HeldArgs> ParseHeldArgs(const std::vector<std::string>& args);

// What the command acts on and talks to.
struct HeldContext {
  std::string profile;      // the profile's name, for the header
  std::string profile_dir;  // <data_root>/<name>, canonical
  std::string workspace;    // canonical host path (the key of the store)
  FILE* in = stdin;
  FILE* out = stdout;
  FILE* err = stderr;
  bool interactive = false;  // `in` is a terminal: apply and drop ask per file
  bool styled = false;       // `out` is a terminal: escapes in reverse video, colours
  // OK when no session of this profile holds views on this workspace; apply
  // refuses otherwise. Unset: not checked.
  std::function<absl::Status()> check_no_session;
};

// Runs the verb; returns the exit code (0, 1 on a failure, 2 on a usage
// error such as apply without a terminal and without --yes).
int RunHeld(const HeldArgs& args, const HeldContext& ctx);

}  // namespace lazaret::cli::held

#endif  // LAZARET_CLIENTS_LAZARET_HELD_COMMAND_H_
