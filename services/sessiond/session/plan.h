// Planning a session: the complete mount list of the agent
// sandbox, its environment, and the exact podman command lines of the
// network sidecar and the agent sandbox. Runs in the session worker
// (lazaret-sessiond --session-worker) on the host. Pure functions over
// already-resolved inputs (the profile from lazaret-configd, the Git Shadow
// plan, the terminal and its terminfo entry, the runtimes found on the
// host), so every flag and every mount can be unit-tested; worker.h and
// start.h do the I/O. The argument vectors built here are the only place podman flags
// for a session's containers are written (podman.h has the queries and the
// removal).
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_PLAN_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_PLAN_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/lazaret/escalation/endpoint.h"
#include "services/sessiond/gitshadow/plan.h"
#include "services/podman/mount_spec.h"
#include "services/sessiond/session/terminal.h"
#include "lazaret/config/v1/config.pb.h"

namespace lazaret::cli::session {

// Resource limits of a session. The task limit is RLIMIT_NPROC of the
// sandbox's processes, which gVisor's kernel enforces itself, rootful and
// rootless, and which the agent (no CAP_SYS_RESOURCE or CAP_SYS_ADMIN) can
// lower but never raise. The cgroup limits below apply rootful only (a
// cgroup v1 host delegates no cgroup to a rootless user; docs/operations.md).
inline constexpr int kSandboxTaskLimit = 4096;
inline constexpr int kSandboxPidsLimit = 4096;
inline constexpr char kSandboxMemory[] = "8g";
inline constexpr int kSidecarPidsLimit = 64;
inline constexpr char kSidecarMemory[] = "64m";

// The capabilities of the agent's root inside gVisor, added to an empty set
// (--cap-drop=all): what apt, dpkg and chown need - changing owners (CHOWN),
// reading and writing files it does not own (DAC_OVERRIDE, FOWNER),
// keeping setgid bits on chown (FSETID), apt's switch to _apt and back
// (SETUID, SETGID) and signalling its own processes of another uid (KILL).
// Not: NET_RAW (raw sockets), NET_BIND_SERVICE, SYS_CHROOT, SETPCAP,
// SETFCAP (file capabilities would reach the host workspace), AUDIT_WRITE,
// MKNOD - podman's defaults that an agent does not need.
// docs/operations.md "The sandbox's privileges" restates this list.
inline constexpr const char* kSandboxCapabilities[] = {
    "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
};
// The sidecar's router changes routes in its own network namespace.
inline constexpr const char* kSidecarCapabilities[] = {"NET_ADMIN"};
// Pinned so no containers.conf changes them (docs/operations.md).
inline constexpr char kSandboxUmask[] = "0022";
inline constexpr char kShmSize[] = "64m";

struct SidecarSpec {
  std::string session_id;
  std::string profile;
  std::string runtime_dir;
  std::string router_host_dir;  // <session>/router
  std::string image;            // kSidecarImage
  bool rootless = false;
  std::string runc_path;  // absolute (FindRunc): no runtime looked up by name
  // With escalation: the session's socket directory (<profile
  // socket_dir>/<id>, holding only escalate.sock), bound read-only at
  // kSidecarBrokerDir for the router's escalation relay. Empty: none.
  std::string escalation_socket_dir;
  // The session has an egress proxy (secrets or HTTP rules): the router
  // gets --egress-socket, on which lazaret-egressd takes the connections
  // to the intercepted hosts.
  bool egress_proxy = false;
};

// podman run --detach ... for the network sidecar (runc, NET_ADMIN only,
// read-only, FROM scratch image, slirp4netns). Every isolation setting a
// containers.conf could change is pinned here as well (PinnedIsolationArgs).
// With escalation, the socket directory's mount and the router's
// --escalation-socket: the relay on the shared loopback is then the
// sandbox's only way to the broker.
std::vector<std::string> SidecarArgv(const SidecarSpec& spec);

// The host escalation of a session whose profile enables it. `socket_dir`
// (<profile socket_dir>/<id>, holding escalate.sock only) is bound
// read-only into the sidecar (SidecarSpec), never into the sandbox; the
// sandbox gets `certs_dir` at kSandboxCertsDir and the lazaret-escalate
// client at kSandboxEscalateClient, both read-only. The plan names the
// certificate directory the broker is expected to create;
// UseEscalationEndpoint replaces it with the one the broker named, once
// checked.
struct EscalationMounts {
  std::string socket_dir;
  std::string certs_dir;
  std::string client_host;  // <libexec>/lazaret-escalate
};

struct SandboxSpec {
  std::string session_id;
  std::string profile;
  std::string runtime_dir;
  // What podman runs: the profile's image reference as planned; with
  // persistent directories, its full id once resolved (UseImageId), so
  // that the overlays' lower layer is exactly the sandbox's image.
  std::string image;
  std::string image_name;  // the profile's reference, for messages
  std::string runsc_path;
  bool rootless = false;
  bool tty = false;
  std::string env_file;
  // runsc's --pod-init-config (trace_config.h): the connection log.
  std::string trace_config;
  std::vector<Mount> mounts;  // in order
  // Set exactly when the profile enables escalation: the certificate and
  // client mounts after `mounts`. No host socket, and no host-uds flag.
  std::optional<EscalationMounts> escalation;
  std::string sandbox_init_host;       // host path of lazaret-sandbox-init
  std::vector<std::string> init_args;  // before "--"
  std::vector<std::string> command;    // after "--"; empty: the shell
};

// The flags both containers share that pin what a containers.conf could
// otherwise set: namespaces (ipc, pid, uts, cgroup private; the user
// namespace is podman's own: --userns=host), no init, no host environment
// or proxy, the umask, /dev/shm size, cgroups enabled (rootful),
// no-new-privileges, never a pull. Capabilities and read-only are per
// container; keys the command line cannot set are in Lazaret's
// containers.conf (podman.h ContainersConfText).
std::vector<std::string> PinnedIsolationArgs(bool rootless);

// podman --runtime-flag=... run ... for the agent sandbox (runsc): the
// spec's mounts in order, the escalation mounts when set, then
// lazaret-sandbox-init read-only at gitshadow::kSandboxInitPath as the
// entrypoint.
absl::StatusOr<std::vector<std::string>> SandboxArgv(const SandboxSpec& spec);

// The gVisor flags, deliberately: hostinet (network=host) because gVisor's
// netstack cannot start on this kernel and the sandbox lives in the
// sidecar's network namespace anyway; ignore-cgroups when rootless (runsc
// cannot create cgroups there). Never a host-uds flag, with or without
// escalation: without one, gVisor refuses to connect to any host socket
// file, so no socket a host program binds in the workspace or a volume is
// reachable from inside (escalation goes through the sidecar's relay;
// docs/escalation.md). Never net-raw. With `trace_config`, the
// pod-init-config that sends every connect() to the session's egress log
// (trace_config.h); it names a file runsc reads, not a socket the sandbox
// can reach.
std::vector<std::string> RunscGlobalFlags(bool rootless, const std::string& trace_config = "");

// The profile's Git Shadow state directory, <profile_dir>/git: where the
// Git Shadow keeps its state, and what session.json names for `lazaret
// clean`'s write-back.
std::string GitStateDir(const lazaret::config::v1::ResolvedProfile& profile);

// Everything a session's plan is made of besides the profile and the Git
// Shadow plan, gathered on the host by the runner.
struct PlanInputs {
  std::string session_id;
  std::string runtime_dir;
  std::string workspace_dir;            // the directory the developer named
  std::vector<EnvSetting> profile_env;  // ResolveProfileEnv (env.h)
  TerminalSetup terminal;
  std::string runsc_path;         // FindRunsc
  std::string runc_path;          // FindRunc
  bool rootless = false;          // Rootless
  std::string sandbox_init_host;  // <libexec>/lazaret-sandbox-init
  // Escalation, used only when the profile enables it:
  std::string escalate_client_host;  // <libexec>/lazaret-escalate
  std::string escalation_certs_dir;  // escalation::ExpectedCertsDir
  std::vector<std::string> command;
  // The held views (services/sessiond/held/view.h): each acted-on path's view
  // bound read-write (or its host entry read-only) at /workspace/<rel>.
  // Built on the host once the session directory exists (UseHeldMounts);
  // empty for a dry run.
  std::vector<BindMount> held_mounts;
  // The sandbox variables of the secrets' placeholders (secrets.h
  // PlaceholderEnv), after the profile's env. Placeholders only: a value
  // never enters a plan.
  std::vector<EnvSetting> placeholder_env;
};

struct SessionPlan {
  std::string id;
  std::string session_path;        // <runtime_dir>/sessions/<id>
  std::string workspace_host_dir;  // bound read-write at /workspace
  // The env file's lines, in order: terminal, the CA variables
  // (trust_host_ca or an egress proxy), profile, the secrets'
  // placeholders, Git Shadow, then LAZARET_ESCALATE when escalation is on
  // (later lines win).
  std::vector<EnvSetting> env;
  // The overlays' merged directories over each persistent directory, in
  // the profile's order (also in sandbox.mounts); lazaret-mount-helper
  // mounts them before the sandbox starts.
  std::vector<BindMount> persistent;
  // Where in sandbox.mounts the held views go: after the workspace and the
  // Git Shadow's mounts (UseHeldMounts).
  size_t held_mounts_at = 0;
  size_t held_mounts = 0;  // how many of them there are
  SidecarSpec sidecar;
  SandboxSpec sandbox;  // sandbox.mounts: the complete list, in order
  std::vector<std::string> sidecar_argv;
  std::vector<std::string> sandbox_argv;
};

// The whole session. The sandbox's mounts, in the order of SPEC 4.1's
// table: the workspace (the Git Shadow's worktree in --worktree mode) at
// /workspace, the Git Shadow's mounts, the held views (inputs.held_mounts,
// a parent before a child), the profile's volumes, its
// persistent directories, the host's terminfo entry (read-only), with
// trust_host_ca the host's certificates (read-only) and the CA bundle's
// tmpfs (host_ca.h); then
// SandboxArgv adds the escalation mounts (when the profile enables
// escalation; its socket directory goes to the sidecar) and
// lazaret-sandbox-init.
// Refuses what cannot be written to the env file or passed to podman, and a
// runtime or socket directory so long that the router's or the endpoint's
// socket path would not fit a Unix socket address.
absl::StatusOr<SessionPlan> PlanSession(const PlanInputs& inputs,
                                        const lazaret::config::v1::ResolvedProfile& profile,
                                        const gitshadow::GitShadowPlan& git);

// The part of a plan a spare is prepared from (docs/architecture.md "Spare
// sidecar"): the id, the session path, the sidecar and its command line,
// and with escalation the endpoint's directories (sandbox.escalation).
// Exactly what PlanSession plans for them from the same inputs, so the
// session that adopts the spare can compare the two sidecar command lines.
absl::StatusOr<SessionPlan> PlanSpare(const PlanInputs& inputs,
                                      const lazaret::config::v1::ResolvedProfile& profile);

// The broker's checked endpoint into the plan: its certificate directory
// replaces the expected one and the sandbox's command line is rebuilt.
// Refuses a plan without escalation and an endpoint of another session or
// socket directory.
absl::Status UseEscalationEndpoint(const escalation::CheckedEndpoint& endpoint, SessionPlan* plan);

// The held views (services/sessiond/held/view.h) into the plan, replacing any
// planned before, after the workspace and Git Shadow mounts, sorted so a
// parent precedes a child; the sandbox's command line is rebuilt. Refuses
// a bind that is not at /workspace/<rel> or that podman cannot carry.
absl::Status UseHeldMounts(std::vector<BindMount> mounts, SessionPlan* plan);

// The sandbox image's full id (64 lowercase hex digits, as `podman image
// inspect --format {{.Id}}` prints it) into the plan: the sandbox runs by
// that id and its command line is rebuilt; image_name keeps the
// reference. Refuses anything else.
absl::Status UseImageId(const std::string& image_id, SessionPlan* plan);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_PLAN_H_
