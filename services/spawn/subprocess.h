// Running host programs (podman, mmdebstrap, git, ldd) captured, attached
// or inherited: for the `lazaret` CLI and lazaret-sessiond's session
// workers and reaps, as their user. The argv is always built by Lazaret
// itself from checked values; nothing here goes through a shell. Every child
// is started by the one spawn core (spawn.h). What a child writes is
// untrusted in size (git reads what the sandbox wrote): captured output is
// bounded.
#ifndef LAZARET_SERVICES_SPAWN_SUBPROCESS_H_
#define LAZARET_SERVICES_SPAWN_SUBPROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/spawn/command_line.h"  // IWYU pragma: export
#include "services/spawn/spawn.h"         // IWYU pragma: export

namespace lazaret::cli {

struct Captured {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// How much a captured child may write to stdout, and separately to stderr,
// by default: far more than any query Lazaret runs prints (the index of a
// very large repository listed by `git ls-files --stage` fits), and little
// enough that a child cannot make the CLI run out of memory.
inline constexpr size_t kDefaultMaxOutputBytes = size_t{64} << 20;

// Runs argv (argv[0] looked up in $PATH) with stdin on /dev/null and stdout
// and stderr captured, in a process group of its own (so a Ctrl-C in the
// user's terminal reaches only `lazaret`, which then tears down in order),
// with an empty signal mask and default dispositions. A `timeout` of zero
// waits forever; on timeout the child's whole process group gets SIGKILL
// (so a grandchild holding the pipes cannot keep the caller waiting) and the
// result is DeadlineExceeded. Output beyond kDefaultMaxOutputBytes ends the
// run as SpawnOptions::max_output_bytes says.
absl::StatusOr<Captured> RunCaptured(
    const std::vector<std::string>& argv,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// Where and with what environment a captured child runs.
struct SpawnOptions {
  std::chrono::milliseconds timeout{0};
  std::string cwd;                                // empty: the caller's
  const std::vector<std::string>* env = nullptr;  // "K=V" entries; null: the caller's
  // Bytes the child reads on stdin (then EOF); null: stdin is /dev/null.
  // Written while its output is read, within the same timeout, so a child
  // that never reads cannot block the caller.
  const std::string* stdin_data = nullptr;
  // Bound on the bytes captured from stdout, and separately from stderr.
  // A child that writes more is not read further: its whole process group
  // gets SIGKILL and the result is ResourceExhausted, so a caller never
  // takes cut-off output for the whole of it.
  size_t max_output_bytes = kDefaultMaxOutputBytes;
};

// RunCaptured with a working directory, a replaced environment, stdin data
// and/or another output bound.
absl::StatusOr<Captured> RunCaptured(const std::vector<std::string>& argv,
                                     const SpawnOptions& options);

// A child started like RunCaptured without a timeout, collected by Wait()
// (with kDefaultMaxOutputBytes).
class AsyncCapture {
 public:
  static absl::StatusOr<AsyncCapture> Start(const std::vector<std::string>& argv);
  AsyncCapture(AsyncCapture&&) noexcept;
  AsyncCapture& operator=(AsyncCapture&&) = delete;
  AsyncCapture(const AsyncCapture&) = delete;
  ~AsyncCapture();
  absl::StatusOr<Captured> Wait();

 private:
  AsyncCapture(pid_t pid, int out_fd, int err_fd) : pid_(pid), out_fd_(out_fd), err_fd_(err_fd) {}
  pid_t pid_;
  int out_fd_;
  int err_fd_;
};

// Runs argv with the terminal: stdin, stdout and stderr inherited, in the
// caller's process group (so the child can own the TTY), empty signal mask,
// default dispositions, and PR_SET_PDEATHSIG(SIGKILL) so it never outlives
// the calling thread. Returns the child's pid; the caller waits for it.
absl::StatusOr<pid_t> SpawnAttached(const std::vector<std::string>& argv);

// Runs argv with stdio inherited (progress output of long builds goes
// straight to the user) and waits for it. Returns the exit code.
absl::StatusOr<int> RunInherited(const std::vector<std::string>& argv);

// While one of these lives on a thread, a child that RunCaptured waits for
// on that thread is abandoned as soon as SIGINT, SIGTERM or SIGHUP is
// pending for the process: its process group gets SIGKILL and the call
// returns CancelledError. The signal stays pending, for the caller's own
// sigtimedwait (`lazaret run` keeps these signals blocked). For work that a
// stop request must never wait on, such as the periodic Git Shadow
// write-back; the final write-back, which must finish, does not use it.
class InterruptibleBySignals {
 public:
  InterruptibleBySignals();
  ~InterruptibleBySignals();
  InterruptibleBySignals(const InterruptibleBySignals&) = delete;
  InterruptibleBySignals& operator=(const InterruptibleBySignals&) = delete;

 private:
  bool previous_;
};

}  // namespace lazaret::cli

#endif  // LAZARET_SERVICES_SPAWN_SUBPROCESS_H_
