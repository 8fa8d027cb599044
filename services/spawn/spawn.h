// Starting a child process from the `lazaret` CLI: the one spawn core every
// way the CLI runs a host program goes through (captured, attached to the
// terminal, inherited, the detached supervisor). Runs in the CLI, as the
// user; the CLI may have other threads (gRPC), so the forked child runs only
// async-signal-safe calls. The argv and environment come from Lazaret itself
// (built from checked values, never through a shell); nothing here parses
// untrusted input.
#ifndef LAZARET_SERVICES_SPAWN_SPAWN_H_
#define LAZARET_SERVICES_SPAWN_SPAWN_H_

#include <sys/types.h>

#include <optional>
#include <string>
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
  // "K=V" entries that replace the environment; nullopt: the caller's.
  std::optional<std::vector<std::string>> env;
  ChildStdio stdin_fd = ChildStdio::Inherit();
  ChildStdio stdout_fd = ChildStdio::Inherit();
  ChildStdio stderr_fd = ChildStdio::Inherit();
  std::string cwd;  // empty: the caller's
  ChildGroup group = ChildGroup::kCaller;
  // PR_SET_PDEATHSIG(SIGKILL): the child dies with the thread that spawned
  // it, and is never started once that thread is already gone.
  bool die_with_parent = false;
};

// A ChildSpec turned into exactly what the forked child uses: the resolved
// program path, NULL-terminated argv and envp arrays, /dev/null opened, the
// target signal mask. Everything is allocated here, before fork, so the
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
  int stdio_[3] = {-1, -1, -1};  // descriptor for 0, 1, 2; -1: inherit
  int dev_null_ = -1;            // owned
};

// Forks and execs `child`. Between fork and execve the child does no
// allocation, no logging and no Status: it resets every caught signal and
// the signals the CLI blocks or handles (SIGINT, SIGTERM, SIGHUP, SIGCHLD,
// SIGPIPE, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU) to their default, applies the
// group, PR_SET_PDEATHSIG, the descriptor plan and the working directory,
// empties the signal mask and execs. A failure of any of these steps
// reaches the caller through a close-on-exec pipe as the step and its
// errno; the child is then reaped and the Status names the program (and
// the working directory). Returns the child's pid; the caller waits for it.
absl::StatusOr<pid_t> Spawn(const PreparedChild& child);

}  // namespace lazaret::cli

#endif  // LAZARET_SERVICES_SPAWN_SPAWN_H_
