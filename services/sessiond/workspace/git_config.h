// The host repository's git configuration as host git sees it from a
// folder, for finding the paths it names inside the working tree
// (services/common/workspace/named_paths.h). Runs in the `lazaret` CLI on
// the host, as the developer, before the sandbox starts (and again at the
// end): host git is run through the Git Shadow's runner
// (services/sessiond/gitshadow/git.h: argv, no shell, GIT_* removed, hooks and
// fsmonitor off, a deadline). The config files may have been written by an
// earlier session's agent; their values are data here, never run.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_GIT_CONFIG_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_GIT_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/common/workspace/named_paths.h"

namespace lazaret::cli::workspace {

// The host's git config as seen from `dir` (system, global, repository,
// worktree, includes), and the top of the working tree there.
struct HostGitConfig {
  std::vector<lazaret::workspace::GitConfigEntry> entries;
  // As HostWorktreeTop(dir) says it.
  absl::StatusOr<std::string> top;
};

// Runs host git `config --list --show-origin --includes -z` and
// `rev-parse --show-toplevel` side by side, with hooks/fsmonitor off; not
// a repository -> the non-repository config. Lazaret's own command-line
// overrides are not listed; the origins of files are absolute. Fails only
// when the config cannot be read (`top` carries its own status).
absl::StatusOr<HostGitConfig> ReadHostGitConfig(const std::string& dir);

// Parses the output of `git config --list --show-origin -z`
// (origin NUL key LF value NUL ..., a key without a value has no LF).
// Entries whose origin is "command line:" are dropped.
absl::StatusOr<std::vector<lazaret::workspace::GitConfigEntry>> ParseGitConfigList(
    absl::string_view out);

// The top of the working tree host git finds from `dir` ("" when `dir` is
// in no working tree: a plain folder, or inside a .git directory).
absl::StatusOr<std::string> HostWorktreeTop(const std::string& dir);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_GIT_CONFIG_H_
