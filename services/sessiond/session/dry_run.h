// `lazaret run --dry-run`: the planned session as text - its directory, the
// names (never the values) of its environment, its persistent directories,
// and every podman command line it would run, in order. Runs in the
// session worker, which sends it to `lazaret run` as StartEvent.plan;
// nothing is started. Secret values never reach the text:
// only the env file would hold them.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_DRY_RUN_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_DRY_RUN_H_

#include <functional>
#include <string>

#include "services/sessiond/session/plan.h"

namespace lazaret::cli::session {

// The text --dry-run prints for `plan`. `is_real_directory` tells which
// persistent directories' merged directories exist already (the others are
// first used by this session).
std::string DryRunText(const SessionPlan& plan, const std::string& runtime_dir,
                       const std::function<bool(const std::string&)>& is_real_directory);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_DRY_RUN_H_
