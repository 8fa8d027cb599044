#include "services/sessiond/session/dry_run.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/lazaret/escalation/broker_client.h"
#include "clients/lazaret/escalation/endpoint.h"
#include "services/sessiond/gitshadow/sandbox_paths.h"
#include "clients/lazaret/net/egress_client.h"
#include "clients/lazaret/net/netpolicy_client.h"
#include "clients/lazaret/persist/mount_client.h"
#include "services/spawn/subprocess.h"
#include "services/sessiond/session/names.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/session/teardown.h"
#include "services/wire/relay_endpoint.h"

namespace lazaret::cli::session {

std::string DryRunText(const SessionPlan& plan, const std::string& runtime_dir,
                       const std::function<bool(const std::string&)>& is_real_directory) {
  std::vector<std::string> names;
  for (const auto& e : plan.env) names.push_back(e.name);
  std::string out;
  absl::StrAppend(&out, "# lazaret run --dry-run: nothing is started. Session ", plan.id,
                  ", profile ", plan.sandbox.profile,
                  plan.sandbox.rootless ? ", rootless" : ", rootful", ".\n");
  absl::StrAppend(&out, "# session directory ", plan.session_path, " (0700); env file ",
                  plan.sandbox.env_file,
                  " (0600) with: ", names.empty() ? "(empty)" : absl::StrJoin(names, " "),
                  " (values not shown)\n");
  if (!plan.persistent.empty()) {
    absl::StrAppend(
        &out, "# persistent directories: podman image inspect --format {{.Id}} ",
        plan.sandbox.image_name,
        " (the sandbox runs by that id), then MountHelperService.AttachSession{", plan.id,
        ", <image id>} on ", persist::MountHelperSocket(runtime_dir), " (at most ",
        persist::kAttachTimeout.count(),
        " s): lazaret-mount-helper mounts (or shares) one fuse-overlayfs per directory, the "
        "image's directory below, the profile's changes above; the answered merged paths must "
        "be exactly these; on any error the sandbox is not started\n");
  }
  for (const BindMount& p : plan.persistent) {
    absl::StrAppend(&out, "# persistent ", p.container, ": ", p.host,
                    is_real_directory(p.host) ? "" : " (first use: the image's content)", "\n");
  }
  absl::StrAppend(
      &out, "# every podman below runs with CONTAINERS_CONF=", ContainersConfPath(runtime_dir),
      " (Lazaret's own; no other containers.conf is read)\n");
  if (plan.sandbox.escalation.has_value()) {
    const EscalationMounts& e = *plan.sandbox.escalation;
    absl::StrAppend(
        &out, "# host escalation: EscalationEndpointService.AttachSession{", plan.id, "} on ",
        escalation::BrokerSocket(runtime_dir), " (at most ", escalation::kAttachTimeout.count(),
        " s): lazaret-brokerd creates ", e.socket_dir, " (0700, holding only ",
        escalation::kEndpointSocketName, ") and the session's certificates (expected in ",
        e.certs_dir,
        ", a memory filesystem); both are checked, then bound read-only: ", e.socket_dir, " -> ",
        kSidecarBrokerDir, " in the sidecar, whose router relays ",
        ::lazaret::escalation::kRelayEndpoint, " (the loopback the sandbox shares) to ",
        kSidecarBrokerSocket, "; the certificates -> ", gitshadow::kSandboxCertsDir, " and ",
        e.client_host, " -> ", gitshadow::kSandboxEscalateClient,
        " in the sandbox (no host socket: runsc opens none); on any error the sandbox is not "
        "started\n");
  } else {
    absl::StrAppend(&out,
                    "# host escalation: disabled for this profile (no socket, no mount, no "
                    "relay)\n");
  }
  absl::StrAppend(&out, CommandLine(plan.sidecar_argv), "\n");
  absl::StrAppend(&out, "# wait until the router answers grpc.health.v1 on ", plan.session_path,
                  "/router/router.sock\n");
  absl::StrAppend(&out, "# hold the router (this lazaret, then the supervisor)\n");
  absl::StrAppend(&out, "# egress policy: NetPolicyService.AttachSession{", plan.id, "} on ",
                  net::NetPolicySocket(runtime_dir), " (at most ", net::kAttachTimeout.count(),
                  " s): lazaret-netpolicyd resolves profile ", plan.sandbox.profile,
                  "'s network settings, applies them in the router, binds ", plan.session_path,
                  "/trace.sock (runsc sends every connect() of the sandbox there, as ",
                  plan.session_path, "/trace.json says; without it runsc does not start the "
                  "sandbox) and returns the applied generation; on any error the sandbox is not "
                  "started\n");
  if (plan.sidecar.egress_proxy) {
    absl::StrAppend(&out, "# egress proxy: EgressService.AttachSession{", plan.id, "} on ",
                    net::EgressSocket(runtime_dir),
                    ": lazaret-egressd connects to the router's ", plan.session_path,
                    "/router/egress.sock, takes the secrets' values (resolved on the host as the session starts; "
                    "the sandbox holds only placeholders) and the HTTP rules, and answers with the "
                    "session's CA, which is added to the sandbox's CA file (",
                    plan.session_path, "/ca/host.pem); on any error the sandbox is not started\n");
  }
  absl::StrAppend(&out, "# held views: every path host programs act on in ",
                  plan.workspace_host_dir, " is copied into ", plan.session_path,
                  "/held/view/ and bound read-write over /workspace/<path> (added after the Git "
                  "Shadow's mounts below); what the session changes there goes to the profile's "
                  "held store, never the folder\n");
  absl::StrAppend(&out, CommandLine(plan.sandbox_argv), "\n");
  absl::StrAppend(&out, "# when the command ends, or on SIGINT/SIGTERM/SIGHUP:\n");
  absl::StrAppend(&out, "#   (on a signal first: ",
                  CommandLine(RemoveArgv(SandboxName(plan.id), kSandboxStopGraceSeconds, false)),
                  ")\n");
  absl::StrAppend(&out, CommandLine(RemoveArgv(SidecarName(plan.id), 0, true)), "\n");
  absl::StrAppend(&out, "# then NetPolicyService.DetachSession{", plan.id, "} (best effort)\n");
  if (plan.sandbox.escalation.has_value()) {
    absl::StrAppend(&out, "# then EscalationEndpointService.DetachSession{", plan.id,
                    "} (best effort; lazaret-brokerd also ends the endpoint when the session "
                    "leaves the registry)\n");
  }
  return out;
}

}  // namespace lazaret::cli::session
