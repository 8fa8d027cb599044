// The terminal of the pty benchmark (pty_bench.cc): a pty pair the bench
// owns, with one program (`lazaret run` or `podman run -t`) started in a
// new session whose controlling terminal and stdin/stdout/stderr are the
// slave; the bench reads and writes the master as a terminal emulator
// would. Runs in the bench process as root. What is read comes from inside
// a sandbox: it is only searched for fixed markers and counted, never
// interpreted, and anything unexpected is reported, never skipped.
#ifndef LAZARET_TESTS_BENCH_PTY_BENCH_TERMINAL_H_
#define LAZARET_TESTS_BENCH_PTY_BENCH_TERMINAL_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::test::bench {

using Clock = std::chrono::steady_clock;

class BenchTerminal {
 public:
  // Opens the pty pair (80x24) and starts argv (execvp) in `cwd` on it.
  static absl::StatusOr<std::unique_ptr<BenchTerminal>> Start(const std::string& cwd,
                                                              const std::vector<std::string>& argv);
  // A program still running gets SIGTERM, then SIGKILL after 30 s.
  ~BenchTerminal();
  BenchTerminal(const BenchTerminal&) = delete;
  BenchTerminal& operator=(const BenchTerminal&) = delete;

  // Reads until `marker` arrived (what came before it is dropped); the time
  // of the read that completed it.
  absl::StatusOr<Clock::time_point> AwaitMarker(std::string_view marker,
                                                Clock::time_point deadline);

  struct Flood {
    uint64_t fill = 0;      // bytes equal to the fill byte
    uint64_t newline = 0;   // '\r' and '\n'
    uint64_t other = 0;     // anything else
    Clock::time_point end;  // when the end marker arrived
  };
  // Reads until `end_marker`, counting what came before it.
  absl::StatusOr<Flood> CountUntil(char fill, std::string_view end_marker,
                                   Clock::time_point deadline);

  // Writes `c` and reads until it comes back: the round trip. Output not
  // yet consumed before the key, or a first byte other than `c`, is an
  // error; bytes after the echo stay unconsumed.
  absl::StatusOr<Clock::duration> EchoRoundTrip(char c, Clock::duration timeout);

  // Whether the bench's own pty echoes input (it must not while an echo is
  // measured: the echo would then not come from the sandbox).
  bool OuterPtyEchoes() const;

  // Reads and drops output until the program exited; its exit code (128+N
  // when killed by signal N).
  absl::StatusOr<int> Wait(Clock::time_point deadline);

 private:
  BenchTerminal(int master, int slave, pid_t pid) : master_(master), slave_(slave), pid_(pid) {}
  // Appends what the master has to pending_, waiting until `deadline`;
  // false on timeout, EOF or EIO (every holder of the slave closed it).
  bool ReadMore(Clock::time_point deadline);

  const int master_;
  const int slave_;
  pid_t pid_;  // -1 once reaped
  int exit_code_ = -1;
  bool eof_ = false;
  std::string pending_;  // read, not yet consumed
};

}  // namespace lazaret::test::bench

#endif  // LAZARET_TESTS_BENCH_PTY_BENCH_TERMINAL_H_
