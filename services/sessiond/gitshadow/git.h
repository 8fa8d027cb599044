// Running the host's git for the Git Shadow. Runs in the `lazaret` CLI on the
// host, as the developer. Git is started with an argv through the CLI's spawn core (fork and
// execve), never through a shell; every GIT_* variable of the caller's environment is removed (so
// GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_* and friends cannot redirect what Lazaret does), messages
// are in the C locale so they can be matched, and hooks and fsmonitor are switched off on every
// invocation. Every run has a deadline: git reads what the sandbox wrote (packs, refs) and runs
// inside `lazaret run`'s supervise loop, so a run that hangs must not hold up signals, sidecar
// checks or teardown. On the deadline git's whole process group is killed.
#ifndef LAZARET_SERVICES_SESSIOND_GITSHADOW_GIT_H_
#define LAZARET_SERVICES_SESSIOND_GITSHADOW_GIT_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli::gitshadow {

// What one git run produced.
struct GitResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;
  std::string err;
};

// Options Lazaret prepends to every git command line: no hook of any repo
// runs, no fsmonitor daemon is started, no terminal prompt.
std::vector<std::string> GitSafetyOptions();

// Deadlines for host git. Queries (rev-parse, for-each-ref, update-ref of
// one ref, ls-files) read only the developer's repository; imports
// (index-pack, fetch) parse what the sandbox wrote and may be large.
inline constexpr std::chrono::milliseconds kGitQueryTimeout = std::chrono::seconds(30);
inline constexpr std::chrono::milliseconds kGitImportTimeout = std::chrono::seconds(60);
// Checking out the agent worktree (--worktree), before the sandbox starts.
inline constexpr std::chrono::milliseconds kGitCheckoutTimeout = std::chrono::minutes(10);

// Runs `git <GitSafetyOptions()> <args>` in `cwd`, with `stdin_data` (if not
// null) on its stdin. Fails when git could not be started or read, and with
// DeadlineExceeded when it ran longer than `timeout` (which must be
// positive: no host git runs without a deadline). Any exit code is returned
// in the result.
absl::StatusOr<GitResult> RunGitRaw(const std::string& cwd, const std::vector<std::string>& args,
                                    std::chrono::milliseconds timeout,
                                    const std::string* stdin_data = nullptr);

// Like RunGitRaw, but a non-zero exit is an error carrying git's stderr.
// Returns stdout.
absl::StatusOr<std::string> RunGit(const std::string& cwd, const std::vector<std::string>& args,
                                   std::chrono::milliseconds timeout);

// The lines of git's output (or of one of Lazaret's own state files),
// without the empty one after a final newline.
std::vector<std::string> Lines(const std::string& text);

}  // namespace lazaret::cli::gitshadow

#endif  // LAZARET_SERVICES_SESSIOND_GITSHADOW_GIT_H_
