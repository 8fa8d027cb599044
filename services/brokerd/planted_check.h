// The planted-code check of an escalation: does the request aim a host
// program at something the session planted in the workspace - a git
// repository (whose config and hooks make host git run any program) or a
// file that editors, shells or git act on by themselves? Runs in
// lazaret-brokerd (the user, no capabilities) before a request is decided
// and again right before an approved command starts (docs/escalation.md
// "Planted code"). The workspace path and the session's start come from the
// supervisor's record; everything below the workspace - names, types,
// symlinks, times, file contents - is the agent's and trusted for nothing:
// directories are opened one component at a time without following a
// symlink, a path an argument names is resolved with openat2(RESOLVE_BENEATH)
// (a symlink that leaves the workspace is never followed), and whatever
// cannot be checked is itself a finding.
//
// "The session created or changed it" is judged by the inode change time
// (ctime) and, for a git directory, its birth time (statx btime): the kernel
// sets both on every write, rename, link, chmod or chown, and nothing inside
// the sandbox can set them back. A file with a ctime at or after the
// session's start (SessionRecord.started_unix, taken before the sandbox
// existed) counts. The broker does not read the CLI's workspace-scan
// snapshot: it is the CLI's file, and times need no second source.
#ifndef LAZARET_SERVICES_BROKERD_PLANTED_CHECK_H_
#define LAZARET_SERVICES_BROKERD_PLANTED_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "services/brokerd/command/checked_command.h"
#include "services/brokerd/command/resolve.h"

namespace lazaret::brokerd {

// What the check knows of the session: both from the supervisor's record.
struct PlantedScope {
  std::string host_workspace;      // canonical absolute path
  int64_t session_start_unix = 0;  // SessionRecord.started_unix
};

// The most directories one request may make the check look at (the
// directories its cwd and arguments name, with their ancestors); beyond it
// the rest is not looked at and that is a finding.
inline constexpr size_t kMaxCheckedDirectories = 512;

struct PlantedReport {
  // Plain words, one finding each, host-written: what was found and where
  // ('/workspace/...' as the agent names it, escaped for display with every
  // space written \x20). Empty: nothing planted found.
  std::vector<std::string> findings;
  // For a git command with no findings whose every directory resolves to
  // the workspace's own repository: GIT_DIR and GIT_WORK_TREE pinned to it,
  // so that git never discovers a repository the agent plants between this
  // check and git's start. Empty otherwise.
  std::vector<std::string> git_pin_env;
};

// Checks `command` (its working directory and every directory its
// arguments name, each with its ancestors up to the workspace root).
// Never fails: what cannot be checked is reported as a finding.
PlantedReport CheckPlanted(const PlantedScope& scope, const command::CheckedCommand& command);

// The same for an argv and a host working directory at or below
// scope.host_workspace (`is_git`: IsGitCommand).
PlantedReport CheckPlantedArgv(const PlantedScope& scope, absl::string_view host_cwd,
                               const std::vector<std::string>& argv, bool is_git);

// True when `binary` is git: its file name is `git` or starts with `git-`
// (git-upload-pack, git-receive-pack, ... read the repository's config too).
bool IsGitBinary(const command::ResolvedBinary& binary);

// True when the command runs git: its binary is git, or any argument's last
// path component is `git` or starts with `git-` (git under a wrapper a
// human may approve: `env`, `nice`, `timeout`, `xargs`). Wider than needed
// on purpose: a false positive only withholds a run at planted code.
bool IsGitCommand(const command::ResolvedBinary& binary, const std::vector<std::string>& argv);

// The environment every git command the broker runs gets on top of the
// broker's own (command-line-scope config through GIT_CONFIG_COUNT, which
// beats every config file): no fsmonitor, no hooks, no pager, no editor, no
// `ext::` transport, no terminal prompt. Defence in depth only: a
// repository's own config can still name filter and diff drivers, so the
// wall is the check above (a git command with findings never runs).
std::vector<std::string> GitProtectionEnvironment();

// The findings of `after` that `before` did not have.
std::vector<std::string> NewFindings(const std::vector<std::string>& before,
                                     const std::vector<std::string>& after);

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_PLANTED_CHECK_H_
