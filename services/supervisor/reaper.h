// The reaper: the one part of the supervisor that keeps the privileges
// `lazaret up` had, so that it can remove a dead session's containers.
//
// Why a separate process: the supervisor drops to no effective capability
// and sets no_new_privs before it reads any input (STYLE.md 6), but rootful
// podman needs root's capabilities and rootless podman may need the setuid
// newuidmap (which no_new_privs defeats) to rejoin the user namespace when
// its pause process is gone. So before the drop, while it has no threads,
// the supervisor forks and execs itself as `lazaret-supervisord --reaper`.
//
// Runs as the user who ran `lazaret up` with that user's privileges (root
// with its capabilities when rootful; the plain user when rootless), without
// no_new_privs. It has no socket and opens nothing: its only input is fd 0,
// a pipe from the supervisor carrying fixed-size requests of one closed,
// typed operation, Reap{id} ("<12 lowercase hex>\n", STYLE.md 4); anything
// else ends the reaper. For each it runs, with an argv and environment built
// before fork, `<lazaret> clean --session ID` - the CLI next to the services,
// which refuses a session whose owner is alive - and writes the exit code
// back on fd 1 ("<id> <3 digits>\n"). What this trusts is the supervisor
// (its parent, same user) for the id; what an id can cause is exactly what
// the user could do with `lazaret clean --session` themselves.
#ifndef LAZARET_SERVICES_SUPERVISOR_REAPER_H_
#define LAZARET_SERVICES_SUPERVISOR_REAPER_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/common/session_id.h"

namespace lazaret::supervisor {

// 12 lowercase hex digits, as `lazaret run` makes them.
using ::lazaret::IsValidSessionId;  // services/common/session_id.h

inline constexpr size_t kReapRequestSize = 13;  // id + '\n'
inline constexpr size_t kReapResultSize = 17;   // id + ' ' + 3 digits + '\n'

// Precondition: IsValidSessionId(id).
std::string EncodeReapRequest(std::string_view id);
// The id of a well-formed request, nullopt for anything else.
std::optional<std::string> ParseReapRequest(std::string_view bytes);
std::string EncodeReapResult(std::string_view id, int exit_code);
std::optional<std::pair<std::string, int>> ParseReapResult(std::string_view bytes);

// How long one reap may take before the reaper kills it.
inline constexpr std::chrono::seconds kReapTimeout{180};

struct ReaperProcess {
  pid_t pid = -1;
  int request_fd = -1;  // write Reap requests here
  int result_fd = -1;   // read results here
};

// Forks and execs `self_exe --reaper --runtime-dir=DIR --cli=CLI` with
// `env`. Precondition: no threads exist, capabilities not yet dropped.
absl::StatusOr<ReaperProcess> StartReaper(const std::string& self_exe, const std::string& cli,
                                          const std::string& runtime_dir,
                                          const std::vector<std::string>& env);

struct ReaperOptions {
  std::string cli;          // absolute path of the `lazaret` binary
  std::string runtime_dir;  // passed as LAZARET_RUNTIME_DIR
};

// The reaper's main loop (fd 0 requests, fd 1 results) until EOF on fd 0.
absl::Status RunReaper(const ReaperOptions& options);

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_REAPER_H_
