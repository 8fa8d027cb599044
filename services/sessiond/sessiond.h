// lazaret-sessiond: the session service. Owns every session of the user
// who ran `lazaret up`: each Start forks and execs this binary again as a
// session worker (`--session-worker`, session/worker.h), which plans,
// starts, supervises and tears down one session; a reap of a dead session
// runs in a child of its own (`--reap-session=ID`, session/reap.h).
//
// Runs as the user who ran `lazaret up`, started by the supervisor. Rootful
// (root) it holds no capability itself, but its bounding set is
// kGrantedByExec and it keeps root's execve rule (no no_new_privs, no
// SECBIT_NOROOT): its workers, its reaps and the podman, conmon, runc and
// runsc they run receive exactly kGrantedByExec. Rootless it holds nothing,
// and no_new_privs stays off so that podman can run the setuid newuidmap.
// Trusts peers of its own uid only; their requests are checked before a
// worker gets them (session_service.h).
#ifndef LAZARET_SERVICES_SESSIOND_SESSIOND_H_
#define LAZARET_SERVICES_SESSIOND_SESSIOND_H_

#include <sys/capability.h>

#include <array>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/common/service_catalog.h"
#include "services/common/service_main.h"

namespace lazaret::sessiond {

// The capabilities this process keeps: none (the service catalog's set).
inline constexpr const auto& kCapabilities = kSessiondCapabilities;

// What a child this process execs as root receives (Declaration::
// granted_by_exec); this process itself keeps none of them. Measured with
// rootful podman 4.3 (runc sidecar on slirp4netns, runsc sandbox) by
// dropping one at a time from this set: docs/architecture.md gives the
// reason for each. deploy/capabilities.toml restates this set and a test
// compares the two.
inline constexpr std::array<cap_value_t, 12> kGrantedByExec = {
    // The sandbox's own set (session/plan.h kSandboxCapabilities): a
    // container gets no capability its runtime's bounding set lacks.
    CAP_CHOWN,
    CAP_DAC_OVERRIDE,
    CAP_FOWNER,
    CAP_FSETID,
    CAP_KILL,
    CAP_SETGID,
    CAP_SETUID,
    // podman, runc, slirp4netns and runsc themselves: without any one of
    // these a session does not start (without SYS_ADMIN podman takes itself
    // for rootless and uses another container store).
    CAP_SETPCAP,
    CAP_NET_BIND_SERVICE,
    CAP_NET_ADMIN,
    CAP_SYS_CHROOT,
    CAP_SYS_ADMIN,
};

struct Options {
  ServiceOptions service;
  std::string libexec_dir;  // lazaret-sandbox-init and the other binaries a session mounts
  std::string program;      // this binary, re-executed as worker and reap
};

// How this binary was asked to run.
struct Invocation {
  enum class Mode { kServe, kSessionWorker, kReap };
  Mode mode = Mode::kServe;
  Options options;
  std::string reap_session;  // kReap: the session id, checked
};

// --runtime-dir=DIR, --socket=PATH, --libexec-dir=DIR, --session-worker,
// --reap-session=ID. The libexec directory defaults to $LAZARET_LIBEXEC_DIR
// when absolute, else this binary's own directory; the program is this
// binary (/proc/self/exe).
absl::StatusOr<Invocation> ParseFlags(int argc, char** argv);

ServiceSpec Spec(const Options& options);

// Installs Lazaret's containers.conf (every podman of every session and
// reap reads only it), then serves until SIGTERM. Preconditions: the
// termination signals are blocked and no other thread exists yet.
absl::Status Run(const Options& options);

// The reap child: reaps session `id` of `runtime_dir` if its owner is
// dead, prints what it did on stdout and returns one of the kReapExit*
// codes (session_service.h).
int RunReap(const std::string& runtime_dir, const std::string& id);

}  // namespace lazaret::sessiond

#endif  // LAZARET_SERVICES_SESSIOND_SESSIOND_H_
