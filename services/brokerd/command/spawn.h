// The fork/execve step of RunningCommand (executor.h), through the spawn
// library (services/spawn/spawn.h). Runs in lazaret-brokerd, possibly with
// other threads running: between fork and execve the child makes only
// async-signal-safe system calls on data built before the fork (no
// allocation, no locks, no logging). Trusts the CheckedCommand it is given
// (that is the point of its type).
#ifndef LAZARET_SERVICES_BROKERD_COMMAND_SPAWN_H_
#define LAZARET_SERVICES_BROKERD_COMMAND_SPAWN_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/brokerd/command/checked_command.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd::command {

struct Spawned {
  pid_t pid = -1;
  // The read ends of the child's stdout and stderr, O_NONBLOCK|O_CLOEXEC.
  fs::UniqueFd out;
  fs::UniqueFd err;
};

// Forks and execs `command` with exactly `env`: the child is the leader of
// a new process group, has stdin /dev/null, stdout and stderr on pipes, no
// other descriptor, the cwd the check opened, an empty signal mask and
// every disposition at SIG_DFL; binary().path is executed as it is, with
// no $PATH lookup. Returns once execve succeeded; an execve
// failure (or any step before it) is reported as an error with the child
// already reaped.
absl::StatusOr<Spawned> Spawn(const CheckedCommand& command, const std::vector<std::string>& env);

}  // namespace lazaret::brokerd::command

#endif  // LAZARET_SERVICES_BROKERD_COMMAND_SPAWN_H_
