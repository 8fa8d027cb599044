// The profile of a session: asking lazaret-configd for it
// (ResolveProfile over the config service's socket) and checking every
// host path in it again. Runs in the session worker (lazaret-sessiond
// --session-worker), as the user. The
// profile is already validated and canonicalised by configd, but configd
// parses agent-written files, so nothing here trusts it: the host paths are
// re-checked with configd's own rules (services/common/profile_paths/profile_check.h) as
// soon as it arrives and again right before the sandbox starts.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_PROFILE_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_PROFILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli::session {

// The resolved profile `profile` (empty: the default one) for the workspace
// `workspace_dir`, with `explicit_config` (--config, may be empty). The
// configuration's warnings are said on stderr. Unavailable, saying to run
// `lazaret up`, when configd does not answer.
absl::StatusOr<lazaret::config::v1::ResolvedProfile> ResolveProfile(
    const std::string& runtime_dir, const std::string& workspace_dir,
    const std::string& explicit_config, const std::string& profile);

// Defence in depth: lazaret-configd parses agent-written files, so every
// host path it returned is checked again here with the same rules
// (profile_check.h) before anything is created from it or mounted.
// `workspace_dir` is the directory the developer named, as configd checked
// it.
absl::Status RecheckProfileHostPaths(const lazaret::config::v1::ResolvedProfile& profile,
                                     const std::string& runtime_dir,
                                     const std::string& workspace_dir,
                                     const std::string& explicit_config);

// The profile's volume host paths are canonical when lazaret-configd
// resolves them; this re-checks, right before the sandbox is created, that
// no component of `path` has since become a symlink (or vanished), so a
// directory swapped for a link to ~/.ssh in between is refused. A window
// of milliseconds until podman mounts remains (docs/operations.md).
absl::Status CheckNoSymlinkComponents(const std::string& path);

// CheckNoSymlinkComponents for every volume source of the profile.
absl::Status RecheckVolumeSources(const lazaret::config::v1::ResolvedProfile& profile);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_PROFILE_H_
