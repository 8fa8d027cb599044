// The arguments of `lazaret state show [PROFILE] [--json]` and `lazaret
// state reset PROFILE [DIR] [--yes]`. Runs in the `lazaret` CLI; pure. The
// names are only parsed here: the mount helper resolves the profile
// through configd and checks the directory is one of its persistent_dirs.
#ifndef LAZARET_CLIENTS_LAZARET_PERSIST_STATE_ARGS_H_
#define LAZARET_CLIENTS_LAZARET_PERSIST_STATE_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli::persist {

inline constexpr char kStateUsage[] =
    "usage: lazaret state show [PROFILE] [--json]\n"
    "       lazaret state reset PROFILE [DIR] [--yes]\n";

struct StateArgs {
  enum class Verb { kShow, kReset } verb = Verb::kShow;
  std::string profile;    // show: empty for the default profile
  std::string directory;  // reset: empty for every persistent directory
  bool json = false;      // show
  bool yes = false;       // reset: no question asked
};

// INVALID_ARGUMENT saying what is wrong (the caller adds kStateUsage).
absl::StatusOr<StateArgs> ParseStateArgs(const std::vector<std::string>& args);

}  // namespace lazaret::cli::persist

#endif  // LAZARET_CLIENTS_LAZARET_PERSIST_STATE_ARGS_H_
