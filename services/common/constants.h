// Names and numbers the `lazaret` CLI and the services must agree on. A
// header of constants only, so that a process needing one of them links
// nothing for it: the CLI includes it instead of linking the supervisor or
// the configuration loader.
#ifndef LAZARET_SERVICES_COMMON_CONSTANTS_H_
#define LAZARET_SERVICES_COMMON_CONSTANTS_H_

namespace lazaret {

// Files in the private runtime directory (runtime_dir.h). The supervisor
// holds an flock on the lock file for its lifetime (the file itself is
// never removed); `lazaret up` reads the log when the supervisor fails.
// Every socket name is in the service catalog (service_catalog.h).
inline constexpr char kSupervisorLockFile[] = "supervisor.lock";
inline constexpr char kSupervisorLogFile[] = "supervisor.log";

// The exit code of `lazaret clean --session ID` when the session's owner is
// still alive, so nothing was removed; a script tells it from success and
// failure.
inline constexpr int kCleanOwnerAliveExitCode = 4;

// The sandbox image built locally from deploy/images/sandbox: the embedded
// default profile's image, and what `lazaret image build` tags. The one
// place the default image name is written.
inline constexpr char kDefaultSandboxImage[] = "localhost/lazaret-sandbox:trixie";

// The name of the profile the embedded default configuration defines.
inline constexpr char kDefaultProfileName[] = "default";

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_CONSTANTS_H_
