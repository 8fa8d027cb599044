#include "services/sessiond/session/plan.h"

#include <sys/un.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "clients/lazaret/escalation/endpoint.h"
#include "services/common/status_util.h"
#include "services/sessiond/session/env.h"
#include "services/sessiond/session/host_ca.h"
#include "services/sessiond/session/mounts.h"
#include "services/sessiond/session/names.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/session/session_dir.h"
#include "services/sessiond/session/terminfo.h"
#include "services/sessiond/session/trace_config.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::session {
namespace {

namespace pb = ::lazaret::config::v1;

void AddLabels(std::vector<std::string>* argv, const std::string& profile, const std::string& id,
               const char* role, const std::string& runtime_dir) {
  argv->push_back(absl::StrCat("--label=", kLabelProfile, "=", profile));
  argv->push_back(absl::StrCat("--label=", kLabelSession, "=", id));
  argv->push_back(absl::StrCat("--label=", kLabelRole, "=", role));
  argv->push_back(absl::StrCat("--label=", kLabelRuntimeDir, "=", runtime_dir));
}

// --cap-drop=all, then exactly `caps`: the set starts empty whatever
// podman's or containers.conf's default_capabilities say.
void AddCapabilities(std::vector<std::string>* argv, absl::Span<const char* const> caps) {
  argv->push_back("--cap-drop=all");
  argv->push_back(absl::StrCat("--cap-add=", absl::StrJoin(caps, ",")));
}

// The escalation mounts of a profile that enables escalation: the session's
// own directory under the profile's socket_dir (configd checked it:
// absolute, canonical, outside the workspace and data_root).
absl::StatusOr<EscalationMounts> PlanEscalation(const PlanInputs& in,
                                                const pb::ResolvedProfile& profile) {
  const std::string& root = profile.escalation().socket_dir();
  if (root.empty() || root[0] != '/') {
    return absl::FailedPreconditionError(
        absl::StrCat("escalation is enabled for profile ", profile.name(),
                     " but it names no absolute socket_dir; set [escalation] socket_dir, or "
                     "enabled = false to run without host escalation"));
  }
  EscalationMounts e;
  e.socket_dir = escalation::SessionSocketDir(root, in.session_id);
  e.certs_dir = in.escalation_certs_dir;
  e.client_host = in.escalate_client_host;
  if (const std::string sock = absl::StrCat(e.socket_dir, "/", escalation::kEndpointSocketName);
      sock.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the escalation socket path ", sock, " is longer than a Unix socket path may be (",
        sizeof(sockaddr_un::sun_path) - 1, " bytes); set a shorter [escalation] socket_dir"));
  }
  // The sidecar binds it; refused here what podman's -v cannot carry.
  LAZ_RETURN_IF_ERROR(MountArgs(BindMount{e.socket_dir, kSidecarBrokerDir, true, true}).status());
  return e;
}

// trust_host_ca: the host's certificates (written to the session directory
// by the start, host_ca.h) bound read-only, the bundle's tmpfs, the
// sandbox-init options that build the bundle, and the variables naming
// them. The variables go before the profile's env, so a profile that sets
// one of them wins.
void PlanHostCa(const std::string& session_path, std::vector<Mount>* mounts,
                std::vector<EnvSetting>* env, std::vector<std::string>* init_args) {
  HostCaPlan ca = PlanHostCaMounts(session_path);
  mounts->insert(mounts->end(), ca.mounts.begin(), ca.mounts.end());
  env->insert(env->end(), ca.env.begin(), ca.env.end());
  init_args->insert(init_args->end(), ca.init_args.begin(), ca.init_args.end());
}

}  // namespace

std::vector<std::string> PinnedIsolationArgs(bool rootless) {
  std::vector<std::string> a = {
      "--pull=never",
      // containers.conf env_host / http_proxy: nothing of the host's
      // environment; the session's env comes only from its env file.
      "--env-host=false",
      "--http-proxy=false",
      // ipcns, pidns, utsns, cgroupns: each container its own.
      "--ipc=private",
      "--pid=private",
      "--uts=private",
      "--cgroupns=private",
      // init: no catatonit from the host as PID 1.
      "--init=false",
      absl::StrCat("--umask=", kSandboxUmask),
      absl::StrCat("--shm-size=", kShmSize),
      "--security-opt=no-new-privileges",
      "--userns=host",
  };
  // cgroups = "disabled" in a containers.conf would silently drop the pids
  // and memory limits. Rootless podman on this cgroup v1 host has no
  // cgroups to enable (docs/operations.md).
  if (!rootless) a.push_back("--cgroups=enabled");
  return a;
}

std::vector<std::string> SidecarArgv(const SidecarSpec& s) {
  std::vector<std::string> a = {"podman", "run", "--detach",
                                absl::StrCat("--name=", SidecarName(s.session_id))};
  AddLabels(&a, s.profile, s.session_id, kRoleSidecar, s.runtime_dir);
  a.insert(a.end(), {
                        // By path: a containers.conf runtimes table cannot
                        // swap the binary behind the name "runc".
                        absl::StrCat("--runtime=", s.runc_path),
                        // One topology rootful and rootless; the host's
                        // loopback is not reachable through it, whatever
                        // containers.conf network_cmd_options say. IPv6
                        // on, so that the router polices both families
                        // with the same defaults.
                        "--network=slirp4netns:allow_host_loopback=false,enable_ipv6=true",
                        // The router is the namespace's only resolver: the
                        // resolv.conf podman writes (which the sandbox
                        // shares) names only it, on the shared loopback.
                        "--dns=127.0.0.1",
                        // A name held for an approver (egress = "ask")
                        // is answered when a human decides: glibc waits
                        // 30 s per try (its most) instead of 5, and tries
                        // 4 times: 120 s, the default ask_timeout.
                        // Every other query is answered within the
                        // router's 5 s deadline, so nothing else changes.
                        "--dns-option=timeout:30",
                        "--dns-option=attempts:4",
                        // The router binds port 53 without
                        // CAP_NET_BIND_SERVICE (NET_ADMIN is its only one).
                        "--sysctl=net.ipv4.ip_unprivileged_port_start=53",
                        "--read-only",
                        "--read-only-tmpfs=false",
                    });
  AddCapabilities(&a, kSidecarCapabilities);
  for (auto& f : PinnedIsolationArgs(s.rootless)) a.push_back(std::move(f));
  if (!s.rootless) {
    a.push_back(absl::StrCat("--pids-limit=", kSidecarPidsLimit));
    a.push_back(absl::StrCat("--memory=", kSidecarMemory));
  }
  a.push_back(absl::StrCat("--volume=", s.router_host_dir, ":", kSidecarRouterDir, ":rw,z"));
  if (!s.escalation_socket_dir.empty()) {
    a.push_back(
        absl::StrCat("--volume=", s.escalation_socket_dir, ":", kSidecarBrokerDir, ":ro,z"));
  }
  a.push_back(s.image);
  a.push_back(absl::StrCat("--runtime-dir=", kSidecarRouterDir));
  a.push_back(absl::StrCat("--socket=", kSidecarRouterSocket));
  if (!s.escalation_socket_dir.empty()) {
    a.push_back(absl::StrCat("--escalation-socket=", kSidecarBrokerSocket));
  }
  if (s.egress_proxy) a.push_back(absl::StrCat("--egress-socket=", kSidecarEgressSocket));
  return a;
}

std::vector<std::string> RunscGlobalFlags(bool rootless, const std::string& trace_config) {
  std::vector<std::string> f = {"--runtime-flag=network=host"};
  if (rootless) f.push_back("--runtime-flag=ignore-cgroups");
  if (!trace_config.empty()) f.push_back(absl::StrCat("--runtime-flag=pod-init-config=", trace_config));
  return f;
}

absl::StatusOr<std::vector<std::string>> SandboxArgv(const SandboxSpec& s) {
  // podman takes --runtime-flag only as a global option, and does not store
  // it in the container: it must be on every run/start of a runsc container.
  std::vector<std::string> a = {"podman"};
  for (auto& f : RunscGlobalFlags(s.rootless, s.trace_config)) a.push_back(std::move(f));
  // No --rm: the teardown removes the sandbox together with its sidecar in
  // one call, and until then `podman inspect` can tell whether it ever
  // started (a runtime that fails leaves it "created").
  a.insert(a.end(), {"run", absl::StrCat("--name=", SandboxName(s.session_id))});
  AddLabels(&a, s.profile, s.session_id, kRoleSandbox, s.runtime_dir);
  a.insert(a.end(), {
                        absl::StrCat("--runtime=", s.runsc_path),
                        absl::StrCat("--network=container:", SidecarName(s.session_id)),
                    });
  AddCapabilities(&a, kSandboxCapabilities);
  for (auto& f : PinnedIsolationArgs(s.rootless)) a.push_back(std::move(f));
  a.push_back(absl::StrCat("--ulimit=nproc=", kSandboxTaskLimit, ":", kSandboxTaskLimit));
  if (!s.rootless) {
    a.push_back(absl::StrCat("--pids-limit=", kSandboxPidsLimit));
    a.push_back(absl::StrCat("--memory=", kSandboxMemory));
    a.push_back(absl::StrCat("--memory-swap=", kSandboxMemory));
  }
  // The agent's terminal transcript is never written to podman's storage.
  a.push_back("--log-driver=none");
  a.push_back("--interactive");
  if (s.tty) a.push_back("--tty");
  // No detach keys: Ctrl-P is a shell key, and a detached sandbox would
  // outlive the session that owns it.
  a.push_back("--detach-keys=");
  a.push_back(absl::StrCat("--env-file=", s.env_file));
  a.push_back(absl::StrCat("--workdir=", gitshadow::kSandboxWorkspace));
  std::vector<Mount> mounts = s.mounts;
  if (s.escalation.has_value()) {
    const EscalationMounts& e = *s.escalation;
    mounts.push_back(BindMount{e.certs_dir, gitshadow::kSandboxCertsDir, true, true});
    mounts.push_back(BindMount{e.client_host, gitshadow::kSandboxEscalateClient, true, false});
  }
  for (const Mount& m : mounts) {
    auto args = MountArgs(m);
    if (!args.ok()) return args.status();
    a.insert(a.end(), args->begin(), args->end());
  }
  auto init = MountArgs(BindMount{s.sandbox_init_host, gitshadow::kSandboxInitPath, true, false});
  if (!init.ok()) return init.status();
  a.insert(a.end(), init->begin(), init->end());
  a.push_back(absl::StrCat("--entrypoint=", gitshadow::kSandboxInitPath));
  a.push_back(s.image);
  a.insert(a.end(), s.init_args.begin(), s.init_args.end());
  a.push_back("--");
  a.insert(a.end(), s.command.begin(), s.command.end());
  return a;
}

std::string GitStateDir(const pb::ResolvedProfile& profile) {
  return absl::StrCat(profile.profile_dir(), "/git");
}

namespace {

// Secrets and HTTP rules are kept by the egress proxy.
bool HasEgressProxy(const pb::ResolvedProfile& profile) {
  return profile.secrets_size() > 0 || profile.http_rules_size() > 0;
}

// The session path and the sidecar, for PlanSession and PlanSpare alike.
absl::Status PlanSidecar(const PlanInputs& in, const pb::ResolvedProfile& profile,
                         const std::optional<EscalationMounts>& escalation, SessionPlan* plan) {
  plan->session_path = SessionPath(in.runtime_dir, plan->id);
  if (const std::string sock = absl::StrCat(plan->session_path, "/router/router.sock");
      sock.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the router socket path ", sock, " is longer than a Unix socket path may be (",
        sizeof(sockaddr_un::sun_path) - 1, " bytes); use a shorter LAZARET_RUNTIME_DIR"));
  }
  plan->sidecar = SidecarSpec{plan->id,
                              profile.name(),
                              in.runtime_dir,
                              absl::StrCat(plan->session_path, "/router"),
                              kSidecarImage,
                              in.rootless,
                              in.runc_path,
                              escalation.has_value() ? escalation->socket_dir : std::string(),
                              HasEgressProxy(profile)};
  plan->sidecar_argv = SidecarArgv(plan->sidecar);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SessionPlan> PlanSpare(const PlanInputs& in, const pb::ResolvedProfile& profile) {
  SessionPlan plan;
  plan.id = in.session_id;
  std::optional<EscalationMounts> escalation;
  if (profile.escalation().enabled()) {
    LAZ_ASSIGN_OR_RETURN(escalation, PlanEscalation(in, profile));
  }
  LAZ_RETURN_IF_ERROR(PlanSidecar(in, profile, escalation, &plan));
  plan.sandbox.session_id = plan.id;
  plan.sandbox.profile = profile.name();
  plan.sandbox.runtime_dir = in.runtime_dir;
  plan.sandbox.rootless = in.rootless;
  plan.sandbox.escalation = std::move(escalation);
  return plan;
}

absl::StatusOr<SessionPlan> PlanSession(const PlanInputs& in, const pb::ResolvedProfile& profile,
                                        const gitshadow::GitShadowPlan& git) {
  SessionPlan plan;
  plan.id = in.session_id;
  plan.workspace_host_dir =
      git.workspace_host_dir.empty() ? in.workspace_dir : git.workspace_host_dir;
  const std::string& workspace = plan.workspace_host_dir;

  // Mounts, in the order of SPEC 4.1's table.
  std::vector<Mount> mounts;
  mounts.push_back(BindMount{workspace, gitshadow::kSandboxWorkspace, /*read_only=*/false,
                             /*selinux_shared=*/true});
  for (const Mount& m : git.mounts) mounts.push_back(m);
  // The held views go here (UseHeldMounts): every path host programs act on
  // is a per-session copy, never the developer's file.
  plan.held_mounts_at = mounts.size();
  for (BindMount& v : ProfileVolumes(profile)) mounts.push_back(std::move(v));
  LAZ_ASSIGN_OR_RETURN(plan.persistent,
                       PlanPersistentDirs(profile.profile_dir(), profile.persistent_dirs()));
  for (const BindMount& p : plan.persistent) mounts.push_back(p);
  const std::optional<TerminfoEntry>& terminfo = in.terminal.terminfo;
  if (terminfo.has_value()) {
    mounts.push_back(BindMount{terminfo->host_path, terminfo->container_path, true, false});
  }

  // Env file order: terminal, profile, Git Shadow (later lines win). The
  // terminal: the same TERM inside, and TERMINFO where its entry is bound.
  if (!in.terminal.term.empty()) {
    plan.env.push_back({"TERM", in.terminal.term, false});
    if (terminfo.has_value()) plan.env.push_back({"TERMINFO", kSandboxTerminfoDir, false});
  }
  std::vector<std::string> init_args = git.init_args;
  // Secrets and HTTP rules are kept by the egress proxy, whose CA the
  // sandbox trusts through the same bundle as the host's CAs.
  if (profile.trust_host_ca() || HasEgressProxy(profile)) {
    PlanHostCa(SessionPath(in.runtime_dir, plan.id), &mounts, &plan.env, &init_args);
  }
  plan.env.insert(plan.env.end(), in.profile_env.begin(), in.profile_env.end());
  plan.env.insert(plan.env.end(), in.placeholder_env.begin(), in.placeholder_env.end());
  plan.env.insert(plan.env.end(), git.env.begin(), git.env.end());
  std::optional<EscalationMounts> escalation;
  if (profile.escalation().enabled()) {
    LAZ_ASSIGN_OR_RETURN(escalation, PlanEscalation(in, profile));
    plan.env.push_back({gitshadow::kEscalateEnvName, gitshadow::kSandboxEscalateClient, false});
  }
  LAZ_RETURN_IF_ERROR(EnvFileText(plan.env).status());

  LAZ_RETURN_IF_ERROR(PlanSidecar(in, profile, escalation, &plan));
  SandboxSpec& sandbox = plan.sandbox;
  sandbox.session_id = plan.id;
  sandbox.profile = profile.name();
  sandbox.runtime_dir = in.runtime_dir;
  sandbox.image = profile.image();
  sandbox.image_name = profile.image();
  sandbox.runsc_path = in.runsc_path;
  sandbox.rootless = in.rootless;
  sandbox.tty = in.terminal.tty;
  sandbox.env_file = absl::StrCat(plan.session_path, "/env");
  sandbox.trace_config = TraceConfigPath(plan.session_path);
  sandbox.mounts = std::move(mounts);
  sandbox.escalation = std::move(escalation);
  sandbox.sandbox_init_host = in.sandbox_init_host;
  sandbox.init_args = std::move(init_args);
  sandbox.command = in.command;
  LAZ_RETURN_IF_ERROR(UseHeldMounts(in.held_mounts, &plan));
  return plan;
}

absl::Status UseHeldMounts(std::vector<BindMount> held, SessionPlan* plan) {
  const std::string prefix = absl::StrCat(gitshadow::kSandboxWorkspace, "/");
  for (const BindMount& b : held) {
    if (!absl::StartsWith(b.container, prefix) || !vocab::IsCleanAbsolutePath(b.container)) {
      return absl::InvalidArgumentError(
          absl::StrCat("held view at ", b.container, ": not a path below /workspace"));
    }
    // The workspace's .git is the Git Shadow's (a tmpfs inside): a view
    // there would poke through it.
    if (vocab::IsAtOrUnder(b.container, absl::StrCat(prefix, ".git"))) {
      return absl::InvalidArgumentError(
          absl::StrCat("held view at ", b.container, ": inside the Git Shadow's .git"));
    }
    LAZ_RETURN_IF_ERROR(MountArgs(b).status());
  }
  std::sort(held.begin(), held.end(),
            [](const BindMount& a, const BindMount& b) { return a.container < b.container; });
  std::vector<Mount>& mounts = plan->sandbox.mounts;
  const size_t at = std::min(plan->held_mounts_at, mounts.size());
  const size_t old = std::min(plan->held_mounts, mounts.size() - at);
  mounts.erase(mounts.begin() + static_cast<std::ptrdiff_t>(at),
               mounts.begin() + static_cast<std::ptrdiff_t>(at + old));
  mounts.insert(mounts.begin() + static_cast<std::ptrdiff_t>(at), held.begin(), held.end());
  plan->held_mounts = held.size();
  LAZ_ASSIGN_OR_RETURN(plan->sandbox_argv, SandboxArgv(plan->sandbox));
  return absl::OkStatus();
}

absl::Status UseEscalationEndpoint(const escalation::CheckedEndpoint& endpoint, SessionPlan* plan) {
  std::optional<EscalationMounts>& e = plan->sandbox.escalation;
  if (!e.has_value()) {
    return absl::FailedPreconditionError("the session's profile does not enable escalation");
  }
  if (endpoint.session_id() != plan->id || endpoint.socket_dir() != e->socket_dir) {
    return absl::FailedPreconditionError(absl::StrCat("the endpoint of ", endpoint.socket_dir(),
                                                      " is not the one planned for ", plan->id,
                                                      " (", e->socket_dir, ")"));
  }
  e->certs_dir = endpoint.certs_dir();
  LAZ_ASSIGN_OR_RETURN(plan->sandbox_argv, SandboxArgv(plan->sandbox));
  return absl::OkStatus();
}

absl::Status UseImageId(const std::string& image_id, SessionPlan* plan) {
  const bool hex =
      image_id.size() == 64 && std::all_of(image_id.begin(), image_id.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      });
  if (!hex) {
    return absl::InvalidArgumentError(
        absl::StrCat("podman named the id of image ", plan->sandbox.image_name, " as '",
                     image_id.substr(0, 80), "', not 64 lowercase hex digits"));
  }
  plan->sandbox.image = image_id;
  LAZ_ASSIGN_OR_RETURN(plan->sandbox_argv, SandboxArgv(plan->sandbox));
  return absl::OkStatus();
}

}  // namespace lazaret::cli::session
