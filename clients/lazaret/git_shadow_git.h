// Running the host's git for the Git Shadow. Runs in the `lazaret` CLI on the
// host, as the developer. Git is started with an argv through posix_spawn,
// never through a shell; every GIT_* variable of the caller's environment is
// removed (so GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_* and friends cannot
// redirect what Lazaret does), messages are in the C locale so they can be
// matched, and hooks and fsmonitor are switched off on every invocation.
#ifndef LAZARET_CLIENTS_LAZARET_GIT_SHADOW_GIT_H_
#define LAZARET_CLIENTS_LAZARET_GIT_SHADOW_GIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli {

// What one git run produced.
struct GitResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;
  std::string err;
};

// Options Lazaret prepends to every git command line: no hook of any repo
// runs, no fsmonitor daemon is started, no terminal prompt.
std::vector<std::string> GitSafetyOptions();

// Runs `git <GitSafetyOptions()> <args>` in `cwd`. Fails only when git could
// not be started or read; any exit code is returned in the result.
absl::StatusOr<GitResult> RunGitRaw(const std::string& cwd, const std::vector<std::string>& args);

// Like RunGitRaw, but a non-zero exit is an error carrying git's stderr.
// Returns stdout.
absl::StatusOr<std::string> RunGit(const std::string& cwd, const std::vector<std::string>& args);

}  // namespace lazaret::cli

#endif  // LAZARET_CLIENTS_LAZARET_GIT_SHADOW_GIT_H_
