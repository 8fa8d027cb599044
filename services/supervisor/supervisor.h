// lazaret-supervisord: started by `lazaret up`. Launches the service set
// (the service catalog, services/common/service_catalog.h), waits for each
// to report healthy, restarts a crashed one with backoff, and answers
// GetStatus/Shutdown on supervisor.sock. lazaret-sessiond is started
// through the launcher (launcher.h, forked before the capability drop), so
// that it keeps what `lazaret up` had. Owns the session registry
// (registry.h): every session's worker registers with it, and when that
// process is gone the supervisor has lazaret-sessiond reap the session
// (session_reaping.h). At startup it reaps every session an earlier set
// left behind. Trusts only its owner (peer uid check) and the binaries next
// to itself; a registering owner is still checked to be the process it
// claims to be.
#ifndef LAZARET_SERVICES_SUPERVISOR_SUPERVISOR_H_
#define LAZARET_SERVICES_SUPERVISOR_SUPERVISOR_H_

#include <sys/capability.h>

#include <array>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "services/common/service_catalog.h"

namespace lazaret::supervisor {

// The supervisor uses no capability itself (its entry in the service
// catalog, services/common/service_catalog.h).
inline constexpr const auto& kCapabilities = kSupervisorCapabilities;

// Held in the permitted and bounding sets only, never effective, so that a
// service started by a root supervisor can receive what it declares
// (CAP_SYS_ADMIN for the mount helper) and can empty its own bounding set
// (CAP_SETPCAP). An unprivileged supervisor has nothing to delegate.
inline constexpr std::array<cap_value_t, 6> kDelegatedCapabilities = {
    CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETPCAP, CAP_SYS_ADMIN};

// One supervised process.
struct ManagedService {
  std::string name;                       // "configd": its socket is the catalog's
  std::string binary;                     // absolute path
  std::vector<std::string> capabilities;  // declared set, for status
  // Run before the binary: {podman, "unshare"} for a rootless mount helper
  // (rootless_launch.h); the pid supervised is then podman's.
  std::vector<std::string> launcher = {};
  // Started, signalled and reaped by the launcher (launcher.h), with what
  // `lazaret up` had: lazaret-sessiond.
  bool via_launcher = false;
};

// The service set `lazaret up` runs: every service of the catalog but the
// supervisor, in its order, from the binaries in `libexec_dir`.
std::vector<ManagedService> DefaultServiceSet(const std::string& libexec_dir);

struct Options {
  std::string runtime_dir;  // empty: DefaultRuntimeDir()
  std::string libexec_dir;  // empty: the directory of this executable
};

// Runs until SIGINT/SIGTERM/SIGHUP or a Shutdown RPC, then asks every live
// session to end, lets the reaps under way finish, stops every service
// (sessiond through the launcher) and removes every socket (the lock file
// stays; only its flock is released). Precondition: termination signals
// are blocked (BlockTerminationSignals) and no threads exist.
absl::Status Run(const Options& options);

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_SUPERVISOR_H_
