// The names and labels of a session's containers, and the fixed paths
// inside its network sidecar. Runs in the `lazaret` CLI (run, ps, stop,
// clean); the supervisor's registry reports the same names
// (services/supervisor/registry.cc). Session ids are checked
// (IsValidSessionId) before they become part of a name.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_NAMES_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_NAMES_H_

#include <string>

namespace lazaret::cli::session {

// Labels on both containers of a session.
inline constexpr char kLabelProfile[] = "io.lazaret.profile";
inline constexpr char kLabelSession[] = "io.lazaret.session";
inline constexpr char kLabelRole[] = "io.lazaret.role";
// The runtime directory of the Lazaret instance that created the container,
// so that `clean` of one instance (another LAZARET_RUNTIME_DIR, a test)
// never reaps the live sessions of another.
inline constexpr char kLabelRuntimeDir[] = "io.lazaret.runtime-dir";
inline constexpr char kRoleSidecar[] = "sidecar";
inline constexpr char kRoleSandbox[] = "sandbox";

// Inside the sidecar.
inline constexpr char kSidecarRouterDir[] = "/run/lazaret/router";
inline constexpr char kSidecarRouterSocket[] = "/run/lazaret/router/router.sock";
// With an egress proxy: the router's socket on which lazaret-egressd takes
// the sandbox's connections to intercepted hosts (<session>/router/ on the
// host).
inline constexpr char kEgressSocketName[] = "egress.sock";
inline constexpr char kSidecarEgressSocket[] = "/run/lazaret/router/egress.sock";
// With escalation: the session's socket directory on the host
// (<socket_dir>/<id>, holding only escalate.sock), bound read-only, and the
// socket in it that the router's escalation relay connects to.
inline constexpr char kSidecarBrokerDir[] = "/run/lazaret/broker";
inline constexpr char kSidecarBrokerSocket[] = "/run/lazaret/broker/escalate.sock";

std::string SidecarName(const std::string& id);  // lazaret-<id>-sidecar
std::string SandboxName(const std::string& id);  // lazaret-<id>-sandbox

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_NAMES_H_
