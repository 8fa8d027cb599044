// Which `lazaret run` requests a spare serves (docs/architecture.md "Spare
// sidecar"). Runs in lazaret-sessiond. A spare is prepared from what
// decides its network sidecar before the profile is read: the workspace,
// --config, the profile's name, and the two variables that pick the
// worker's host tools (SUDO_UID, LAZARET_RUNSC). The worker that adopts it
// re-resolves the profile and compares the sidecar it would start with the
// one it holds; a request that differs in anything else (command, options,
// environment, terminal) is served by the same spare.
#ifndef LAZARET_SERVICES_SESSIOND_SPARE_H_
#define LAZARET_SERVICES_SESSIOND_SPARE_H_

#include <optional>
#include <string>

#include "lazaret/session/v1/session.pb.h"

namespace lazaret::sessiond {

// The variables of StartRequest.env a spare is prepared with.
inline constexpr const char* kSpareEnv[] = {"SUDO_UID", "LAZARET_RUNSC"};

// The key of the spare that can serve `request`; nullopt for a request no
// spare serves (--dry-run, --help, arguments that do not parse: the worker
// reports those).
std::optional<std::string> SpareKey(const session::v1::StartRequest& request);

// The request a spare for `request` is prepared from: spare set, its
// workspace, `--config FILE` and PROFILE only (no command, no option of
// the session itself), and only kSpareEnv of its environment. Precondition:
// SpareKey(request) has a value.
session::v1::StartRequest SpareRequest(const session::v1::StartRequest& request);

}  // namespace lazaret::sessiond

#endif  // LAZARET_SERVICES_SESSIOND_SPARE_H_
