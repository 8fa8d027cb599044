// A session's own check of a profile that lazaret-configd returned. Runs in
// the session worker of lazaret-sessiond, as the user: it is called as soon
// as the profile arrives (before any directory is created from it) and
// again right before the sandbox is started. It trusts nothing in the
// profile: configd parses agent-written files, and a compromised or buggy
// parser must not become a mount. The rules are configd's own, from
// lazaret_host_paths (host_paths.h), applied with the worker's own view of
// the host (HostContextFromEnvironment) and of the workspace.
#ifndef LAZARET_SERVICES_COMMON_PROFILE_PATHS_PROFILE_CHECK_H_
#define LAZARET_SERVICES_COMMON_PROFILE_PATHS_PROFILE_CHECK_H_

#include <string>

#include "absl/status/status.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/common/profile_paths/host_paths.h"

namespace lazaret::config {

// Refuses the profile unless every host path in it passes:
// - data_root: absolute, clean, canonical, no symlink in the part that
//   exists, not inside a sensitive directory nor the workspace;
// - profile_dir: exactly <data_root>/<name>, and the same checks, nor
//   containing a sensitive directory;
// - every volume: CheckMountSource (existing, no symlink component,
//   canonical, not sensitive nor containing a sensitive path - ~/.ssh,
//   Lazaret's configuration, state and runtime directories, the
//   workspace's .git, ...), CheckVolumePlacement, and a valid container path;
// - escalation.socket_dir: absolute, clean, canonical, outside the
//   workspace and data_root;
// - no file the trusted layers read (TrustedPaths, with `explicit_config`)
//   inside the workspace, data_root or a read-write volume.
// `workspace_dir` is canonical. The error names the path and the rule.
absl::Status CheckResolvedProfileHostPaths(const v1::ResolvedProfile& profile,
                                           const HostContext& host,
                                           const std::string& workspace_dir,
                                           const std::string& explicit_config);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_COMMON_PROFILE_PATHS_PROFILE_CHECK_H_
