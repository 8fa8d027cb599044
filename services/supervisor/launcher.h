// The launcher: the one part of the supervisor that keeps the privileges
// `lazaret up` had, so that it can start lazaret-sessiond with them.
//
// Why a separate process: the supervisor drops to no effective capability
// and sets no_new_privs before it reads any input (STYLE.md 6), but
// lazaret-sessiond runs podman, which rootful needs root's capabilities
// and rootless may need the setuid newuidmap (which no_new_privs defeats)
// to rejoin the user namespace when its pause process is gone. So before
// the drop, while it has no threads, the supervisor forks and execs itself
// as `lazaret-supervisord --launcher`.
//
// Runs as the user who ran `lazaret up` with that user's privileges (root
// with its capabilities when rootful; the plain user when rootless),
// without no_new_privs, single-threaded. It has no socket and opens
// nothing but /dev/null. Its only input is fd 0, a pipe from the
// supervisor carrying fixed-size requests of one closed, typed set
// (STYLE.md 4):
//   Start      "start\n"  fork and exec lazaret-sessiond, when none runs
//   Terminate  "term \n"  SIGTERM to it, when it runs
//   Kill       "kill \n"  SIGKILL to it, when it runs
// Anything else, or a Start while sessiond runs, ends the launcher (and
// sessiond with it: its death signal). What it execs is fixed when the
// launcher starts: `<libexec>/lazaret-sessiond --runtime-dir=DIR
// --libexec-dir=<libexec>` (the
// binary the service catalog names, checked absolute and executable), its
// argv and environment built before any fork, in a process group of its
// own, stdin /dev/null, stdout and stderr the supervisor's log, dying with
// the launcher (PR_SET_PDEATHSIG SIGTERM), as the launcher dies with the
// supervisor. It reports on fd 1 in fixed-size lines: "started <pid>",
// "exited <wait status>", "failed". What it trusts is the supervisor (its
// parent, same user) for when; what a request can cause is that one
// lazaret-sessiond runs or is signalled - what the user could do by
// starting it themselves.
#ifndef LAZARET_SERVICES_SUPERVISOR_LAUNCHER_H_
#define LAZARET_SERVICES_SUPERVISOR_LAUNCHER_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lazaret::supervisor {

// ---- The pipe protocol ----

enum class LauncherRequest { kStart, kTerminate, kKill };

inline constexpr size_t kLauncherRequestSize = 6;

std::string EncodeLauncherRequest(LauncherRequest request);
// The request of exactly one well-formed record; nullopt for anything else.
std::optional<LauncherRequest> ParseLauncherRequest(std::string_view bytes);

struct LauncherReport {
  enum class Kind { kStarted, kExited, kFailed };
  Kind kind = Kind::kFailed;
  // kStarted: sessiond's pid (> 0); kExited: its wait status; kFailed: 0
  // (why is in the log).
  int value = 0;

  bool operator==(const LauncherReport&) const = default;
};

// "<kind, 7 columns> <10 digits>\n"
inline constexpr size_t kLauncherReportSize = 19;

std::string EncodeLauncherReport(const LauncherReport& report);
// The report of exactly one well-formed record; nullopt for anything else.
std::optional<LauncherReport> ParseLauncherReport(std::string_view bytes);

// ---- The supervisor's side ----

// The supervisor's end of a running launcher. Used from the supervision
// loop thread only.
class LauncherClient {
 public:
  // Takes ownership of the descriptors: `pidfd` names the launcher.
  LauncherClient(pid_t pid, int pidfd, int request_fd, int report_fd)
      : pid_(pid), pidfd_(pidfd), request_fd_(request_fd), report_fd_(report_fd) {}
  ~LauncherClient();

  LauncherClient(const LauncherClient&) = delete;
  LauncherClient& operator=(const LauncherClient&) = delete;

  pid_t pid() const { return pid_; }
  // Readable when a report arrived (or the launcher is gone).
  int report_fd() const { return report_fd_; }

  // False when the launcher is gone.
  bool Send(LauncherRequest request);
  // One report; nullopt when the launcher is gone or wrote something that
  // is not a report.
  std::optional<LauncherReport> Read();
  // Closes the request pipe: the launcher then ends sessiond, if it still
  // runs, and exits. Waits for it up to `timeout`, then kills it. The
  // launcher's exit is not reported anywhere else after this.
  void Finish(std::chrono::milliseconds timeout);

 private:
  const pid_t pid_;
  int pidfd_;
  int request_fd_;
  int report_fd_;
};

// Forks and execs `self_exe --launcher --runtime-dir=DIR --libexec-dir=DIR`
// with `env`, dying with the calling thread (SIGTERM). Precondition: no
// threads exist, capabilities not yet dropped.
absl::StatusOr<std::unique_ptr<LauncherClient>> StartLauncher(
    const std::string& self_exe, const std::string& runtime_dir, const std::string& libexec_dir,
    const std::vector<std::string>& env);

// ---- The launcher process ----

struct LauncherOptions {
  std::string runtime_dir;
  std::string libexec_dir;  // absolute; lazaret-sessiond is taken from here
};

// How long the launcher lets sessiond end after the request pipe closed.
inline constexpr std::chrono::seconds kLauncherStopGrace{30};

// The launcher's main loop (fd 0 requests, fd 1 reports) until EOF on fd 0.
// Precondition: single-threaded, the process's environment is what
// sessiond gets.
absl::Status RunLauncher(const LauncherOptions& options);

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_LAUNCHER_H_
