// The profile a session in a workspace gets: lazaret-configd's
// ResolveProfile with the session's selector, asked the one way every
// caller asks it (the session worker before it plans a session, `lazaret
// held` to find the store a session of that workspace keeps). Runs in the
// caller, as the user. configd's answer is the configuration of files the
// agent may have written: the caller re-checks its host paths
// (profile_check.h) before it makes anything of them.
#ifndef LAZARET_SERVICES_COMMON_PROFILE_PATHS_RESOLVE_PROFILE_H_
#define LAZARET_SERVICES_COMMON_PROFILE_PATHS_RESOLVE_PROFILE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::config {

// Asks configd (on its socket in `runtime_dir`) for `profile` (empty: the
// default) of `workspace_dir` with `explicit_config`. `warn` gets each
// warning about this profile, one line "warning: FILE[:LINE]: KEY:
// MESSAGE"; warnings about other profiles belong to `lazaret config
// check`. Unavailable with the fix (`lazaret up`) when configd does not
// answer.
absl::StatusOr<v1::ResolvedProfile> ResolveProfileThroughConfigd(
    const std::string& runtime_dir, const std::string& workspace_dir,
    const std::string& explicit_config, const std::string& profile,
    const std::function<void(const std::string&)>& warn);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_COMMON_PROFILE_PATHS_RESOLVE_PROFILE_H_
