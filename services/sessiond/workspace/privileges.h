// Setuid/setgid bits and file capabilities on what the session wrote in
// the workspace or an rw volume: a host user running such a file would run
// the agent's code with other privileges. Runs in the `lazaret` CLI on the
// host, as the developer (or root for rootful podman): every few ticks
// while the sandbox runs, at session end and in `lazaret clean`. Only
// entries the session created or changed (ctime at or after the start) are
// touched, each through an O_PATH|O_NOFOLLOW descriptor whose own fstat
// decided, and changed through /proc/self/fd, so a swap between look and
// act cannot redirect the change. A capability that cannot be removed costs
// the file its execute bits.
#ifndef LAZARET_SERVICES_SESSIOND_WORKSPACE_PRIVILEGES_H_
#define LAZARET_SERVICES_SESSIOND_WORKSPACE_PRIVILEGES_H_

#include <sys/stat.h>
#include <time.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "services/sessiond/workspace/roots.h"
#include "services/common/fs/fd.h"

namespace lazaret::cli::workspace {

inline constexpr char kCapabilityXattr[] = "security.capability";

// The periodic sweep while the sandbox runs: hands entries changed at or
// after `since` back to the root's owner (ScanRoot::hand_back_ownership;
// counted in `handed_back` when it is not null) and strips setuid/setgid
// bits and file capabilities from them. Appends to `stripped`. Bounded by
// `limits`; cheap when nothing changed (one fstatat per entry).
absl::Status StripPrivilegeBits(const std::vector<ScanRoot>& roots, const timespec& since,
                                const ScanLimits& limits, std::vector<std::string>* stripped,
                                std::map<std::string, uint64_t>* handed_back = nullptr);

// One entry of a walk: `name` in `dir`, at `rel` below `root`, `st` its
// fstatat. Removes setuid/setgid bits and file capabilities when it was
// changed at or after `since`; appends what it removed to `stripped` (when
// not null) and what it could not remove to `problems`.
void StripEntry(const ScanRoot& root, const timespec& since, const fs::DirFd& dir,
                const std::string& name, const std::string& rel, const struct stat& st,
                std::vector<std::string>* stripped, std::vector<std::string>* problems);

}  // namespace lazaret::cli::workspace

#endif  // LAZARET_SERVICES_SESSIOND_WORKSPACE_PRIVILEGES_H_
