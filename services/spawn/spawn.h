// Starting a child process: the one spawn core of every Lazaret process that
// forks (the CLI's host programs and the detached supervisor, sessiond's
// podman and session workers, the supervisor's services, brokerd's approved
// commands, the mount helper's podman and fuse programs). Runs in whichever
// process links it, as that process's user, with that process's
// capabilities; the caller may have other threads (gRPC), so the forked
// child runs only async-signal-safe calls on data prepared before fork. The
// argv, environment and descriptors come from the caller, built from
// checked values and never through a shell; nothing here parses untrusted
// input.
#ifndef LAZARET_SERVICES_SPAWN_SPAWN_H_
#define LAZARET_SERVICES_SPAWN_SPAWN_H_

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli {

// `program` found in $PATH (or the absolute path itself when it has a
// slash and is executable); NotFound otherwise.
absl::StatusOr<std::string> FindProgram(const std::string& program);

// The exit code a shell would report for a wait status.
int ExitCodeOf(int wait_status);

// What one of the child's descriptors 0, 1 and 2 becomes.
struct ChildStdio {
  enum class Kind { kInherit, kDevNull, kFd };
  static ChildStdio Inherit() { return {Kind::kInherit, -1}; }
  static ChildStdio DevNull() { return {Kind::kDevNull, -1}; }
  // `fd` (a pipe end, a socket, a log file opened before the spawn; opened
  // close-on-exec, so the child gets it only on the slot) is duplicated
  // onto the slot in the child. The caller keeps its own copy and closes it
  // after Spawn.
  static ChildStdio Fd(int fd) { return {Kind::kFd, fd}; }

  Kind kind = Kind::kInherit;
  int fd = -1;
};

// Which process group and session the child is in.
enum class ChildGroup {
  kCaller,      // the caller's (so it can own the terminal)
  kOwnGroup,    // a new group it leads (a Ctrl-C reaches only the CLI; a
                // timeout can kill the whole group)
  kOwnSession,  // setsid(): detached from the terminal, for a daemon
  // setsid(), then stdin (a terminal: a pty slave) becomes the new
  // session's controlling terminal (TIOCSCTTY) with the child as its
  // foreground group: job control and Ctrl-C inside, as under a login.
  kTerminalSession,
};

// What the caller wants started.
struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up with FindProgram
  // Nonempty: the absolute path executed as it is, with no $PATH lookup
  // (argv[0] is then only the name the program sees). For a caller that
  // found the program in fixed directories or was handed a checked binary.
  std::string program;
  // "K=V" entries that replace the environment; nullopt: the caller's.
  std::optional<std::vector<std::string>> env;
  ChildStdio stdin_fd = ChildStdio::Inherit();
  ChildStdio stdout_fd = ChildStdio::Inherit();
  ChildStdio stderr_fd = ChildStdio::Inherit();
  // Descriptors the child gets besides 0, 1 and 2: {slot in the child, fd
  // in the parent}. Each slot (3 or above, each at most once) gets a
  // duplicate without close-on-exec; the parent's fd is left as it is (the
  // caller closes its own copy after Spawn). A slot may equal its fd.
  // Every descriptor not planned here or in stdio is closed at execve.
  std::vector<std::pair<int, int>> extra_fds;
  std::string cwd;  // empty: the caller's
  // >= 0: the working directory as an open directory (fchdir), such as one
  // a checker opened; not together with `cwd`.
  int cwd_fd = -1;
  ChildGroup group = ChildGroup::kCaller;
  // PR_SET_PDEATHSIG(death_signal): the child gets death_signal when the
  // thread that spawned it ends, and is never started once that thread is
  // already gone.
  bool die_with_parent = false;
  int death_signal = SIGKILL;
  // Capabilities (bit 1 << CAP_x) raised as ambient capabilities in the
  // child, so a program without file capabilities keeps them across
  // execve. Only those in the caller's permitted set are raised (a caller
  // that dropped one, such as a unit test run without privileges, starts
  // the program without it, which then fails at what needed it).
  uint64_t ambient_capabilities = 0;
};

// A ChildSpec turned into exactly what the forked child uses: the resolved
// program path, NULL-terminated argv and envp arrays, /dev/null opened, the
// descriptor plan. Everything is allocated here, before fork, so the
// child only reads it.
class PreparedChild {
 public:
  static absl::StatusOr<PreparedChild> Create(ChildSpec spec);

  PreparedChild(PreparedChild&&) noexcept;
  PreparedChild& operator=(PreparedChild&&) = delete;
  PreparedChild(const PreparedChild&) = delete;
  ~PreparedChild();

 private:
  friend absl::StatusOr<pid_t> Spawn(const PreparedChild& child);
  explicit PreparedChild(ChildSpec spec) : spec_(std::move(spec)) {}

  ChildSpec spec_;
  std::string path_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;      // empty: the caller's environ at spawn time
  // The descriptor plan: slots_[i] gets sources_[i] (stdio first, then
  // extra_fds); a slot of 0, 1 or 2 not listed is inherited.
  std::vector<int> slots_;
  std::vector<int> sources_;
  int dev_null_ = -1;  // owned
};

// Forks and execs `child`. Between fork and execve the child does no
// allocation, no logging and no Status: it resets every signal disposition
// (caught or ignored: SIG_IGN survives execve) to its default, applies the
// group, PR_SET_PDEATHSIG, the descriptor plan (everything else
// close-on-exec), the working directory and the ambient capabilities,
// empties the signal mask and execs. A failure of any of these steps
// reaches the caller through a close-on-exec pipe as the step and its
// errno; the child is then reaped and the Status names the program (and
// the working directory). Returns the child's pid; the caller waits for it.
absl::StatusOr<pid_t> Spawn(const PreparedChild& child);

}  // namespace lazaret::cli

#endif  // LAZARET_SERVICES_SPAWN_SPAWN_H_
