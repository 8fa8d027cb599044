// The arguments of `lazaret state show [PROFILE] [--json] [--config FILE]`
// and `lazaret state reset PROFILE [DIR] [--yes] [--config FILE]`. Runs in
// the `lazaret` CLI; pure. The
// names are only parsed here: the mount helper resolves the profile
// through configd and checks the directory is one of its persistent_dirs.
#ifndef LAZARET_CLIENTS_LAZARET_PERSIST_STATE_ARGS_H_
#define LAZARET_CLIENTS_LAZARET_PERSIST_STATE_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli::persist {

inline constexpr char kStateUsage[] =
    "usage: lazaret state show [PROFILE] [--json] [--config FILE]\n"
    "       lazaret state reset PROFILE [DIR] [--yes] [--config FILE]\n"
    "The profile is the one `lazaret run` in this directory (with --config FILE)\n"
    "would use.\n";

struct StateArgs {
  enum class Verb { kShow, kReset } verb = Verb::kShow;
  std::string profile;    // show: empty for the default profile
  std::string directory;  // reset: empty for every persistent directory
  bool json = false;      // show
  bool yes = false;       // reset: no question asked
  std::string explicit_config;  // --config FILE, made absolute; empty when not given
};

// INVALID_ARGUMENT saying what is wrong (the caller adds kStateUsage).
// `cwd` (absolute) makes a relative --config FILE absolute, as `lazaret run`
// does.
absl::StatusOr<StateArgs> ParseStateArgs(const std::vector<std::string>& args,
                                         const std::string& cwd);

}  // namespace lazaret::cli::persist

#endif  // LAZARET_CLIENTS_LAZARET_PERSIST_STATE_ARGS_H_
