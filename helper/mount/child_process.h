// Starting the programs lazaret-mount-helper runs (podman, fuse-overlayfs,
// fuse2fs, mkfs.ext4, e2fsck, resize2fs): found in fixed system
// directories, never through $PATH, started with an argv the caller built
// from checked values, never through a shell, by the spawn library
// (services/spawn/spawn.h). Runs in lazaret-mount-helper; between fork and
// execve nothing allocates.
#ifndef LAZARET_HELPER_MOUNT_CHILD_PROCESS_H_
#define LAZARET_HELPER_MOUNT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::mounthelper {

// The absolute path of `name` in /usr/local/bin, /usr/bin, /bin, /usr/sbin
// or /sbin; NOT_FOUND naming the program and deploy/setup-host.sh.
absl::StatusOr<std::string> FindProgram(const std::string& name);

struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // stdout and stderr, when captured
};

// Forks and execs `argv` (argv[0] absolute, executed as it is) in a
// session of its own, with stdin on /dev/null and stdout+stderr on a pipe
// (`capture`) or the helper's stderr. `keep` descriptors stay open across
// execve at their numbers; every other one is closed. The child gets
// CAP_SYS_ADMIN as an ambient capability and, when `file_ops`, the
// delegated file capabilities (mounthelper.h), those of them the helper
// holds permitted. A failure before the program runs (execve included) is
// an error naming the program.
absl::StatusOr<Child> Spawn(const std::vector<std::string>& argv, bool capture,
                            const std::vector<int>& keep, bool file_ops = false);

struct ChildResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string output;  // stdout and stderr, the first MiB
};
// Runs `argv` to completion.
absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& argv,
                                     const std::vector<int>& keep = {});
// Runs `argv` to completion; its output, or an error naming the command
// and what it wrote when it did not exit 0.
absl::StatusOr<std::string> RunCapture(const std::vector<std::string>& argv,
                                       const std::vector<int>& keep = {});

// Waits until `pid` is gone (a child of ours, or one adopted from a
// previous helper, told apart from a reused pid by `start_time`).
bool WaitGone(pid_t pid, uint64_t start_time, std::chrono::milliseconds timeout);

// The start time of `pid` (field 22 of /proc/<pid>/stat), 0 when gone.
uint64_t ProcessStartTime(pid_t pid);

// /proc/self/fd/<fd>: how a checked descriptor is named to a child that
// inherits it.
std::string FdPath(int fd);

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_CHILD_PROCESS_H_
