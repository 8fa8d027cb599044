// Starting one session worker (`lazaret-sessiond --session-worker`) and
// the packet protocol on its control socket. Runs in lazaret-sessiond, as
// the user who ran `lazaret up`, on the one long-lived thread that forks
// workers (worker_table.h): the worker's death signal (SIGTERM) follows
// that thread. The worker is this same binary; its reports are trusted as
// far as their form: each is one bounded packet that must parse as a
// WorkerReport.
#ifndef LAZARET_SERVICES_SESSIOND_WORKER_LAUNCH_H_
#define LAZARET_SERVICES_SESSIOND_WORKER_LAUNCH_H_

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/session/v1/session.pb.h"

namespace lazaret::sessiond {

// The largest packet either side sends on the control socket
// (session.proto: WorkerReport).
inline constexpr size_t kMaxControlPacketBytes = 1 << 20;

// The descriptor the worker finds its end of the control socket on.
inline constexpr int kWorkerControlFd = 3;

// How a worker is started: this binary, and what it passes on.
struct WorkerCommand {
  std::string program;  // absolute path of lazaret-sessiond (or a test's fake worker)
  std::string runtime_dir;
  std::string libexec_dir;
};

// The worker's argv: program --session-worker --runtime-dir=DIR
// --libexec-dir=DIR.
std::vector<std::string> WorkerArgv(const WorkerCommand& command);

// A started worker. The caller owns both descriptors.
struct LaunchedWorker {
  pid_t pid = -1;
  int pidfd = -1;       // for signals and for seeing its exit
  int control_fd = -1;  // non-blocking, close-on-exec; our end of the socketpair
};

// Creates the SOCK_SEQPACKET socketpair, spawns the worker (stdin
// /dev/null, stdout and stderr this process's log, its own session, death
// signal SIGTERM, the other end on descriptor 3) and sends `request` (a
// serialized StartRequest, at most kMaxControlPacketBytes) as the first
// packet. A worker that cannot be given its request is killed and reaped.
// Must run on the thread whose end the workers' death signal follows.
absl::StatusOr<LaunchedWorker> LaunchWorker(const WorkerCommand& command,
                                            const std::string& request);

// Reads one packet from `fd` (non-blocking). nullopt: nothing to read now.
// An error for a truncated or unparsable packet; OutOfRange at the end of
// the stream (the worker closed its end or exited).
absl::StatusOr<std::optional<session::v1::WorkerReport>> ReadReport(int fd);

// Sends one packet. For the worker's side and for tests.
absl::Status SendPacket(int fd, const std::string& bytes);

}  // namespace lazaret::sessiond

#endif  // LAZARET_SERVICES_SESSIOND_WORKER_LAUNCH_H_
