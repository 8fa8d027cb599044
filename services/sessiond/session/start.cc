#include "services/sessiond/session/start.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "clients/lazaret/escalation/attach.h"
#include "clients/lazaret/escalation/broker_client.h"
#include "clients/lazaret/net/egress_client.h"
#include "clients/lazaret/net/netpolicy_client.h"
#include "clients/lazaret/persist/mount_client.h"
#include "services/spawn/subprocess.h"
#include "services/sessiond/session/console.h"
#include "services/sessiond/session/env.h"
#include "services/sessiond/session/host_ca.h"
#include "services/sessiond/session/mounts.h"
#include "services/sessiond/session/names.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/session/profile.h"
#include "services/sessiond/session/signals.h"
#include "services/sessiond/session/trace_config.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "services/common/fs/dir.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::session {
namespace {

using Clock = std::chrono::steady_clock;

// How long the router may take to answer after `podman run -d` returned.
constexpr auto kRouterStartTimeout = std::chrono::seconds(20);

// The session directory, then (fail closed) the supervisor's registration:
// nothing starts unless the supervisor watches this process.
absl::Status Register(LiveSession* s, bool spare) {
  SessionRecord record;
  record.id = s->plan.id;
  record.profile = s->profile.name();
  record.workspace = s->workspace_dir;
  record.git_state_dir = GitStateDir(s->profile);
  record.pid = getpid();
  record.started_unix = time(nullptr);
  record.explicit_config = s->explicit_config;
  LAZ_ASSIGN_OR_RETURN(s->dir, SessionDir::Create(s->runtime_dir, record, spare));
  LAZ_ASSIGN_OR_RETURN(s->registration, SessionRegistration::Register(s->runtime_dir, record));
  return absl::OkStatus();
}

// The CA file the sandbox's bundle adds: with trust_host_ca the
// certificates of the store the host's OpenSSL reads for this user,
// re-encoded, and with an egress proxy its session CA; written into the
// session directory, where the plan binds it (PlanHostCa). A store that
// cannot be read or holds anything but certificates ends the start: never
// a sandbox that silently lacks them.
absl::Status WriteHostCa(LiveSession* s) {
  const bool proxy = !s->egress_ca_pem.empty();
  if (!s->profile.trust_host_ca() && !proxy) return absl::OkStatus();
  HostCaCertificates certs;
  if (s->profile.trust_host_ca()) {
    absl::StatusOr<HostCaCertificates> read = ReadHostCaStore(s->caller_env);
    if (!read.ok()) {
      return absl::Status(read.status().code(),
                          absl::StrCat(read.status().message(), "; the sandbox was not started"));
    }
    certs = *std::move(read);
  }
  if (proxy) {
    absl::StatusOr<HostCaCertificates> ca =
        ReencodeCertificates(s->egress_ca_pem, "the egress proxy's session CA");
    if (!ca.ok() || ca->count != 1) {
      return absl::InternalError(
          "lazaret-egressd answered without one CA certificate; the sandbox was not started");
    }
    certs.pem += ca->pem;
    certs.count += 1;
    if (certs.source.empty()) certs.source = ca->source;
  }
  LAZ_RETURN_IF_ERROR(WriteHostCaFile(s->dir->path(), certs));
  const std::string line = absl::StrCat("CA file ", certs.source, ": ", certs.count,
                                        " certificates bound at ", kSandboxHostCaFile);
  Trace(line.c_str());
  return absl::OkStatus();
}

// A session with secrets or HTTP rules: lazaret-egressd connects to the
// router's egress socket and holds the secrets' values (wiped here once it
// has them) and the rules; its answer is the CA the sandbox must trust.
// netpolicyd already knows the session (ResolveUpstream). No proxy, no
// sandbox: a session never starts with requests its profile meant to
// restrict going out unrestricted - and without a proxy the intercepted
// names lead nowhere.
absl::Status AttachEgress(LiveSession* s) {
  if (!s->plan.sidecar.egress_proxy) return absl::OkStatus();
  s->egress_attached = true;  // from here on, the teardown detaches it
  egress::v1::AttachSessionRequest req;
  req.set_session_id(s->plan.id);
  req.set_egress_socket(absl::StrCat(s->dir->path(), "/router/", kEgressSocketName));
  if (s->secrets != nullptr) {
    for (const ResolvedSecret& r : s->secrets->secrets()) {
      egress::v1::SecretValue* v = req.add_secrets();
      *v->mutable_spec() = r.spec;
      v->set_placeholder(r.placeholder);
      v->set_value(r.value);
    }
  }
  for (const auto& rule : s->profile.http_rules()) *req.add_http_rules() = rule;
  absl::StatusOr<egress::v1::AttachSessionResponse> resp =
      net::AttachEgress(s->runtime_dir, &req);
  if (s->secrets != nullptr) s->secrets->WipeValues();
  if (!resp.ok()) {
    return absl::Status(resp.status().code(),
                        absl::StrCat("the egress proxy could not be set up: ",
                                     resp.status().message(), "; the sandbox was not started"));
  }
  s->egress_ca_pem = resp->ca_pem();
  const std::string line =
      absl::StrCat("egress proxy attached for ", absl::StrJoin(resp->hosts(), " "));
  Trace(line.c_str());
  return absl::OkStatus();
}

// The profile's persistent directories: the image resolved to its full id
// (the sandbox then runs by it, so the overlays' lower layer is exactly its
// image), lazaret-mount-helper mounts (or shares) the overlays and answers
// where, and that must be exactly where the plan binds them. No answer, no
// sandbox: never a silent start without persistence.
absl::Status AttachPersistence(LiveSession* s) {
  if (s->plan.persistent.empty()) return absl::OkStatus();
  const std::string name = s->plan.sandbox.image_name;
  LAZ_ASSIGN_OR_RETURN(const std::string id, ImageId(name));
  if (absl::Status st = UseImageId(id, &s->plan); !st.ok()) {
    return absl::InternalError(absl::StrCat("persistent directories could not be set up: ",
                                            st.message(), "; the sandbox was not started"));
  }
  s->persistence_attached = true;  // from here on, the teardown detaches it
  persist::MountClient client(persist::MountHelperSocket(s->runtime_dir));
  absl::StatusOr<mounthelper::v1::AttachSessionResponse> answer =
      client.AttachSession(s->plan.id, id);
  if (!answer.ok()) {
    return absl::Status(answer.status().code(),
                        absl::StrCat("persistent directories could not be mounted: ",
                                     answer.status().message(), "; the sandbox was not started"));
  }
  std::vector<persist::PlannedOverlay> planned;
  for (const BindMount& p : s->plan.persistent) planned.push_back({p.container, p.host});
  if (absl::Status st = persist::CheckAttachedMounts(planned, id, *answer); !st.ok()) {
    return absl::InternalError(absl::StrCat("persistent directories could not be mounted: ",
                                            st.message(), "; the sandbox was not started"));
  }
  std::vector<std::string> dirs;
  for (const BindMount& p : s->plan.persistent) dirs.push_back(p.container);
  const std::string line = absl::StrCat("persistent directories mounted over image ", name, " (",
                                        id.substr(0, 12), "): ", absl::StrJoin(dirs, " "));
  Trace(line.c_str());
  return absl::OkStatus();
}

absl::Status StartSidecar(LiveSession* s) {
  s->sidecar_created = true;  // from here on, teardown removes it (by name)
  LAZ_ASSIGN_OR_RETURN(Captured r, RunCaptured(s->plan.sidecar_argv, std::chrono::seconds(120)));
  if (r.exit_code == 0) return absl::OkStatus();
  const std::string err(absl::StripTrailingAsciiWhitespace(r.err));
  if (absl::StrContains(err, "image not known") || absl::StrContains(err, "no such image")) {
    return absl::FailedPreconditionError(MissingImageHint(kSidecarImage));
  }
  return absl::InternalError(
      absl::StrCat("starting the network sidecar failed (podman exit ", r.exit_code, "): ", err));
}

absl::Status WaitForRouter(LiveSession* s) {
  const std::string socket = s->dir->router_socket();
  const auto deadline = Clock::now() + kRouterStartTimeout;
  absl::Status last = absl::UnavailableError("the router socket does not exist yet");
  while (Clock::now() < deadline) {
    if (int sig = PendingTermination(); sig != 0) {
      s->stop_signal = sig;
      return absl::CancelledError(absl::StrCat("interrupted by ", strsignal(sig)));
    }
    if (access(socket.c_str(), F_OK) == 0) {
      last = CheckHealth(socket, 500);
      if (last.ok()) return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const std::string logs = ContainerLogTail(SidecarName(s->plan.id), 20);
  return absl::DeadlineExceededError(absl::StrCat("the network sidecar's router did not answer on ",
                                                  socket, " within ", kRouterStartTimeout.count(),
                                                  " s (", last.message(), "). Its log:\n", logs));
}

// Both holds before the sandbox exists: ours, then the supervisor's.
absl::Status HoldRouter(LiveSession* s) {
  LAZ_ASSIGN_OR_RETURN(s->hold,
                       RouterHold::Open(s->dir->router_socket(), "cli", std::chrono::seconds(5)));
  return s->registration->AttachRouter();
}

// lazaret-netpolicyd compiles the profile's network settings into the
// session's route table and pushes it into the router (ApplyPolicy, read
// back) before the sandbox exists, so its first connect is governed. No
// answer, no sandbox: the namespace stays closed and the start ends.
// The profile's ports, then -p's: netpolicyd binds the host's loopback
// and the router relays to the sandbox's (docs/networking.md "Inbound
// ports"). They close with the session (netpolicyd's detach). A forward
// that cannot open fails the start with the reason.
absl::Status OpenInboundPorts(LiveSession* s) {
  std::vector<lazaret::common::v1::PortForward> ports(s->profile.network().ports().begin(),
                                                      s->profile.network().ports().end());
  ports.insert(ports.end(), s->ports.begin(), s->ports.end());
  if (ports.empty()) return absl::OkStatus();
  auto stub = netpolicy::v1::NetPolicyService::NewStub(
      DialUnix(net::NetPolicySocket(s->runtime_dir)));
  for (const lazaret::common::v1::PortForward& p : ports) {
    grpc::ClientContext cc;
    cc.set_deadline(std::chrono::system_clock::now() + net::kCallTimeout);
    netpolicy::v1::PortRequest req;
    req.mutable_session()->set_id(s->plan.id);
    *req.mutable_port() = p;
    netpolicy::v1::PortList list;
    if (grpc::Status st = stub->AddPort(&cc, req, &list); !st.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                          absl::StrCat("host port ", p.host_port(), " could not be forwarded: ",
                                       st.error_message(), "; the sandbox was not started"));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyEgressPolicy(LiveSession* s) {
  s->policy_attached = true;  // from here on, the teardown detaches it
  net::NetPolicyClient client(net::NetPolicySocket(s->runtime_dir));
  absl::StatusOr<netpolicy::v1::PolicyApplied> applied = client.Attach(s->plan.id);
  if (!applied.ok()) {
    return absl::Status(applied.status().code(),
                        absl::StrCat("the egress policy could not be applied: ",
                                     applied.status().message(), "; the sandbox was not started"));
  }
  if (applied->has_session() && applied->session().id() != s->plan.id) {
    return absl::InternalError(absl::StrCat(
        "the egress policy could not be applied: lazaret-netpolicyd answered for session ",
        applied->session().id().substr(0, 64), "; the sandbox was not started"));
  }
  if (applied->generation() == 0) {
    return absl::InternalError(
        "the egress policy could not be applied: lazaret-netpolicyd answered without an "
        "applied generation; the sandbox was not started");
  }
  const std::string line =
      absl::StrCat("egress policy applied: generation ", applied->generation(), ", ",
                   applied->routes(), " routes, digest ", applied->digest());
  Trace(line.c_str());
  return absl::OkStatus();
}

// lazaret-brokerd creates the session's escalation endpoint (its socket
// directory, which the sidecar binds, and its certificate directory, which
// the sandbox binds) before either container exists; the answer is checked
// (escalation/endpoint.h) before either is planned as a mount. No endpoint,
// no sandbox: never a silent start without it.
// A spare's plan has no sandbox yet: the endpoint goes into the plan of
// the request that adopts it (worker.cc).
absl::Status AttachEscalation(LiveSession* s, bool spare = false) {
  s->escalation_attached = true;  // from here on, the teardown detaches it
  escalation::BrokerClient client(escalation::BrokerSocket(s->runtime_dir));
  LAZ_ASSIGN_OR_RETURN(escalation::CheckedEndpoint endpoint,
                       escalation::AttachEndpoint(
                           client, s->plan.id, s->plan.sandbox.escalation->socket_dir, geteuid()));
  if (absl::Status st = spare ? absl::OkStatus() : UseEscalationEndpoint(endpoint, &s->plan);
      !st.ok()) {
    return absl::InternalError(absl::StrCat("host escalation could not be set up: ", st.message(),
                                            "; the sandbox was not started"));
  }
  s->escalation_endpoint = endpoint;
  const std::string line = absl::StrCat("escalation endpoint ready: ", endpoint.socket_dir(),
                                        ", certificates in ", endpoint.certs_dir());
  Trace(line.c_str());
  return absl::OkStatus();
}

// The held views (held/view.h): every path host programs act on in the
// mounted workspace is shown through a per-session copy, so nothing the
// agent writes there reaches the developer's folder. Built once the
// session directory exists (a reap finds them there), right before the
// sandbox, and their binds replace the plan's.
absl::Status BuildHeldViews(LiveSession* s) {
  held::ViewRequest req;
  req.session_id = s->plan.id;
  req.workspace = s->plan.workspace_host_dir;
  req.profile_dir = s->profile.profile_dir();
  req.home = s->caller_env("HOME").value_or("");
  req.session_dir = s->dir->path();
  req.rootless = s->plan.sandbox.rootless;
  std::vector<std::string> notices;
  absl::StatusOr<held::SessionViews> views = held::SessionViews::Build(req, &notices);
  if (!views.ok()) {
    return absl::Status(views.status().code(),
                        absl::StrCat("the paths host programs act on could not be held in views: ",
                                     views.status().message(), "; the sandbox was not started"));
  }
  for (const std::string& n : notices) Say(n);
  std::vector<BindMount> mounts = views->Mounts();
  s->writes.set_views(*std::move(views));
  return UseHeldMounts(std::move(mounts), &s->plan);
}

// The held views first: their placeholders are Lazaret's, older than the
// snapshot, so no sweep takes them for the agent's. Then the workspace's
// git directories as they are before the session.
absl::Status PrepareWorkspace(LiveSession* s) {
  LAZ_RETURN_IF_ERROR(BuildHeldViews(s));
  Trace("held views built");
  if (absl::Status st = s->writes.Snapshot(s->plan.id, s->plan.workspace_host_dir,
                                           s->plan.sandbox.rootless, s->profile, s->dir->path());
      !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("recording the workspace's git directories "
                                                "before the session: ",
                                                st.message()));
  }
  Trace("workspace snapshot taken");
  return absl::OkStatus();
}

// The sidecar, its router answering (by then its DNS listeners and, with
// escalation, its relay to the broker are bound), and both holds.
absl::Status StartNetwork(LiveSession* s) {
  LAZ_RETURN_IF_ERROR(StartSidecar(s));
  Trace("sidecar started");
  LAZ_RETURN_IF_ERROR(WaitForRouter(s));
  Trace("router healthy");
  s->router = RouterProcess::Find(s->dir->router_socket());
  LAZ_RETURN_IF_ERROR(HoldRouter(s));
  Trace("router held");
  return absl::OkStatus();
}

// A termination signal that is pending ends the start.
absl::Status CheckNotStopped(LiveSession* s) {
  if (int sig = PendingTermination(); sig != 0) {
    s->stop_signal = sig;
    return absl::CancelledError(absl::StrCat("interrupted by ", strsignal(sig)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PrepareSpare(LiveSession* s) {
  LAZ_RETURN_IF_ERROR(CheckNotStopped(s));
  LAZ_RETURN_IF_ERROR(Register(s, /*spare=*/true));
  if (s->plan.sandbox.escalation.has_value()) {
    LAZ_RETURN_IF_ERROR(AttachEscalation(s, /*spare=*/true));
  }
  LAZ_RETURN_IF_ERROR(StartNetwork(s));
  return CheckNotStopped(s);
}

absl::Status CheckSpare(LiveSession* s) {
  if (s->dir == nullptr || s->hold == nullptr || s->registration == nullptr) {
    return absl::FailedPreconditionError("the spare holds no router");
  }
  // No sandbox without a live supervisor: it still knows the session.
  if (absl::Status st = s->registration->Check(); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("the supervisor: ", st.message()));
  }
  return CheckHealth(s->dir->router_socket(), 500);
}

absl::StatusOr<pid_t> StartSession(LiveSession* s) {
  LAZ_RETURN_IF_ERROR(CheckNotStopped(s));
  if (s->adopted) {
    LAZ_RETURN_IF_ERROR(s->dir->Adopt());
    Trace("spare adopted");
  } else {
    LAZ_RETURN_IF_ERROR(Register(s, /*spare=*/false));
    Trace("session registered");
  }
  LAZ_ASSIGN_OR_RETURN(std::string env_text, EnvFileText(s->plan.env));
  LAZ_RETURN_IF_ERROR(s->dir->WriteEnvFile(env_text));
  LAZ_RETURN_IF_ERROR(WriteTraceConfig(*s->dir));
  // RunSession installed Lazaret's containers.conf before any thread
  // existed; no podman call of a session runs without it (podman.h).
  if (const char* c = std::getenv("CONTAINERS_CONF");
      c == nullptr || c != ContainersConfPath(s->runtime_dir)) {
    return absl::InternalError("Lazaret's containers.conf is not installed");
  }
  LAZ_RETURN_IF_ERROR(AttachPersistence(s));
  Trace("session directory ready");

  // 1. The escalation endpoint, when the profile enables it: its socket
  // directory must exist before the sidecar that binds it is created.
  if (s->plan.sandbox.escalation.has_value() && !s->adopted) {
    LAZ_RETURN_IF_ERROR(AttachEscalation(s));
    LAZ_RETURN_IF_ERROR(CheckNotStopped(s));
  }
  // 2. The network sidecar, and its router answering: by then its DNS
  // listeners and, with escalation, its relay to the broker are bound.
  // Meanwhile the held views and the workspace snapshot, which need
  // neither container (PrepareWorkspace touches only the plan's sandbox
  // mounts and the session's writes, nothing the steps below read). The
  // future joins on every return.
  std::future<absl::Status> workspace =
      std::async(std::launch::async, [s] { return PrepareWorkspace(s); });
  if (s->adopted) {
    Trace("spare's router held");
  } else {
    LAZ_RETURN_IF_ERROR(StartNetwork(s));
  }
  // 3. The egress policy, applied in the router before the sandbox exists.
  LAZ_RETURN_IF_ERROR(CheckNotStopped(s));
  LAZ_RETURN_IF_ERROR(ApplyEgressPolicy(s));
  LAZ_RETURN_IF_ERROR(OpenInboundPorts(s));
  LAZ_RETURN_IF_ERROR(AttachEgress(s));
  LAZ_RETURN_IF_ERROR(WriteHostCa(s));
  LAZ_RETURN_IF_ERROR(CheckNotStopped(s));
  LAZ_RETURN_IF_ERROR(workspace.get());

  // 4. Only now the agent sandbox. Its volume sources are re-checked here,
  // as late as possible (configd resolved them symlink-free).
  LAZ_RETURN_IF_ERROR(RecheckVolumeSources(s->profile));
  // Against the directory the developer named, as configd checked it (in
  // --worktree mode the mounted workspace is Lazaret's own worktree under
  // the profile directory).
  LAZ_RETURN_IF_ERROR(
      RecheckProfileHostPaths(s->profile, s->runtime_dir, s->workspace_dir, s->explicit_config));
  // podman gets a pty of the worker's own as its terminal (or three
  // pipes); what it shows goes through the terminal policy to the hub,
  // which keeps it for the terminals that attach (sandbox_io.h).
  if (s->hub_events == nullptr) return absl::InternalError("the session has no attach events");
  SandboxIo::Options io;
  io.tty = s->plan.sandbox.tty;
  io.rows = s->rows;
  io.cols = s->cols;
  io.policy.clipboard_write = s->profile.terminal().clipboard_write();
  LAZ_ASSIGN_OR_RETURN(s->io, SandboxIo::Create(io));
  AttachHub::Options hub;
  hub.mode = s->plan.sandbox.tty ? AttachHub::Mode::kTty : AttachHub::Mode::kStream;
  hub.session_id = s->plan.id;
  hub.clipboard_write = s->profile.terminal().clipboard_write();
  // Escalation on, or egress = "ask" (names the sandbox asks for are shown
  // as network requests), and no remote approver asked for: the attached
  // terminals may decide the session's requests.
  const bool asks = s->profile.network().egress() == config::v1::EGRESS_MODE_ASK;
  const bool remote = s->approver.empty() ? s->profile.escalation().approver() ==
                                                config::v1::EscalationPolicy::APPROVER_REMOTE
                                          : s->approver == "remote";
  hub.inline_approver = (s->plan.sandbox.escalation.has_value() || asks) && !remote;
  s->hub = std::make_unique<AttachHub>(std::move(hub), s->io.get(), s->hub_events);
  s->io->SetHub(s->hub.get());
  return s->io->Start(s->plan.sandbox_argv);
}

}  // namespace lazaret::cli::session
