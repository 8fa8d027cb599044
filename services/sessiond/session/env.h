// The sandbox environment of a session: the profile's env (literals and
// `env:VAR` pulled from the caller's environment, StartRequest.env) and the
// env file podman reads. Runs in the session worker (lazaret-sessiond
// --session-worker, as the user). Values come from the developer's
// configuration and the environment `lazaret run` was started in; every one is
// treated as a secret (written only to the 0600 env file, never logged)
// and checked to fit one env file line.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_ENV_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_ENV_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/podman/mount_spec.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli::session {

// Reads a variable of the caller's environment; nullopt when unset.
using HostEnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The real environment of this process (getenv): for tests and tools;
// a session takes its caller's (LiveSession::caller_env).
std::optional<std::string> HostEnv(const std::string& name);

// The profile's env, in order: literals as given, `env:VAR` pulls from
// `lookup`. An unset or empty VAR is an error naming the profile key and the
// variable (fail closed: never an empty secret). Every value is marked
// secret (redacted everywhere); names and values are checked to fit an env
// file line.
absl::StatusOr<std::vector<EnvSetting>> ResolveProfileEnv(
    const lazaret::config::v1::ResolvedProfile& profile, const HostEnvLookup& lookup);

// Checks a name/value pair can be written as one `NAME=VALUE` line.
absl::Status CheckEnvSetting(const EnvSetting& e);

// The env file podman reads with --env-file: one NAME=VALUE per line. Later
// lines win, so callers order them: Lazaret's terminal settings, the host
// CA's variables (host_ca.h; a profile may override them), the profile's
// env, then the Git Shadow's (which a profile cannot override).
absl::StatusOr<std::string> EnvFileText(const std::vector<EnvSetting>& env);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_ENV_H_
