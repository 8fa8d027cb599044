// The table of Lazaret's services: for each process of the service set its
// name, the file name of its socket in the private runtime directory, its
// binary in the libexec directory, the capabilities it keeps, and what it
// does. The one place these are written: every socket a client dials, every
// socket a service binds, the set the supervisor starts (DefaultServiceSet)
// and the capability set each service drops to (its kCapabilities refers to
// the constant here) come from it. Also the names of the sockets each
// session has of its own. Constants only; linked into every host process
// (services, CLI) and trusted by all of them, since it is code.
#ifndef LAZARET_SERVICES_COMMON_SERVICE_CATALOG_H_
#define LAZARET_SERVICES_COMMON_SERVICE_CATALOG_H_

#include <sys/capability.h>

#include <array>
#include <span>
#include <string>
#include <string_view>

namespace lazaret {

struct ServiceEntry {
  // "configd": the supervisor's and `lazaret status`'s name for it, and its
  // log prefix ("lazaret-<name>").
  const char* name;
  // "configd.sock": its socket, in the runtime directory.
  const char* socket;
  // "lazaret-configd": its executable, in the libexec directory.
  const char* binary;
  // The capabilities it keeps after startup (capabilities.h drops the
  // rest); deploy/capabilities.toml restates them and a test compares.
  std::span<const cap_value_t> capabilities;
  // One line: what it does.
  const char* does;
};

// The capability sets, one per service. A service's header refers to its
// set by its own name (configd::kCapabilities and so on).
inline constexpr std::array<cap_value_t, 0> kSupervisorCapabilities = {};
inline constexpr std::array<cap_value_t, 0> kConfigdCapabilities = {};
inline constexpr std::array<cap_value_t, 0> kNetPolicydCapabilities = {};
inline constexpr std::array<cap_value_t, 0> kBrokerdCapabilities = {};
inline constexpr std::array<cap_value_t, 0> kEgressdCapabilities = {};
inline constexpr std::array<cap_value_t, 1> kMountHelperCapabilities = {CAP_SYS_ADMIN};
// lazaret-sessiond is started by the supervisor's launcher with what
// `lazaret up` had (services/supervisor/launcher.h), because it runs podman;
// this is the set it keeps of that (none: what the programs it execs as
// root receive is sessiond::kGrantedByExec, services/sessiond/sessiond.h).
inline constexpr std::array<cap_value_t, 0> kSessiondCapabilities = {};

inline constexpr ServiceEntry kSupervisorService = {
    .name = "supervisor",
    .socket = "supervisor.sock",
    .binary = "lazaret-supervisord",
    .capabilities = kSupervisorCapabilities,
    .does = "starts the service set, restarts what crashes, keeps the session registry and "
            "reaps a session whose worker is gone",
};
inline constexpr ServiceEntry kConfigdService = {
    .name = "configd",
    .socket = "configd.sock",
    .binary = "lazaret-configd",
    .capabilities = kConfigdCapabilities,
    .does = "parses the TOML configuration layers into resolved, validated profiles",
};
inline constexpr ServiceEntry kNetPolicydService = {
    .name = "netpolicyd",
    .socket = "netpolicyd.sock",
    .binary = "lazaret-netpolicyd",
    .capabilities = kNetPolicydCapabilities,
    .does = "compiles each session's egress policy into its sidecar router and answers its DNS",
};
inline constexpr ServiceEntry kEgressdService = {
    .name = "egressd",
    .socket = "egressd.sock",
    .binary = "lazaret-egressd",
    .capabilities = kEgressdCapabilities,
    .does = "the egress proxy: puts secrets into requests to their own hosts and applies HTTP "
            "rules, for sessions whose profile names them",
};
inline constexpr ServiceEntry kBrokerdService = {
    .name = "brokerd",
    .socket = "brokerd.sock",
    .binary = "lazaret-brokerd",
    .capabilities = kBrokerdCapabilities,
    .does = "serves the sandboxes' host-command requests and the approver API",
};
inline constexpr ServiceEntry kMountHelperService = {
    .name = "mount-helper",
    .socket = "mount-helper.sock",
    .binary = "lazaret-mount-helper",
    .capabilities = kMountHelperCapabilities,
    .does = "mounts and unmounts the overlays of profile persistence",
};
inline constexpr ServiceEntry kSessiondService = {
    .name = "sessiond",
    .socket = "sessiond.sock",
    .binary = "lazaret-sessiond",
    .capabilities = kSessiondCapabilities,
    .does = "starts, holds and ends sessions (one worker process each) and reaps dead ones",
};

// Every service, the supervisor first. The supervisor runs the others, in
// this order.
inline constexpr std::array<const ServiceEntry*, 7> kServiceCatalog = {
    &kSupervisorService, &kConfigdService,     &kNetPolicydService, &kEgressdService,
    &kBrokerdService,    &kMountHelperService, &kSessiondService,
};

// The sockets every session has of its own, in directories of that
// session: lazaret-brokerd's escalation endpoint (mounted into the
// sidecar), and the session worker's AttachService and its framed twin.
inline constexpr char kEscalationSocketName[] = "escalate.sock";
inline constexpr char kAttachSocketName[] = "attach.sock";
// The same protocol framed on a plain socket, which a terminal attaches
// through (services/sessiond/session/attach_frames.h).
inline constexpr char kAttachFramesSocketName[] = "attach-frames.sock";

// The catalog's entry named `name`; nullptr when there is none.
const ServiceEntry* FindService(std::string_view name);

// <runtime_dir>/<service.socket>
std::string ServiceSocketPath(const std::string& runtime_dir, const ServiceEntry& service);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_SERVICE_CATALOG_H_
