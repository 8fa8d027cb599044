// One running session: its plan and every resource it holds, in the order
// start.h acquires them; supervise.h watches them and teardown.h releases
// them in the order that keeps the agent's work. Runs in the session worker
// (lazaret-sessiond --session-worker, as the user); its main thread owns
// it, the attach threads reach only the hub, the I/O and StopRequests.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_LIVE_SESSION_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_LIVE_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "clients/lazaret/escalation/endpoint.h"
#include "lazaret/common/v1/common.pb.h"
#include "services/sessiond/session/plan.h"
#include "services/sessiond/session/attach_hub.h"
#include "services/sessiond/session/env.h"
#include "services/sessiond/session/registry_client.h"
#include "services/sessiond/session/router_watch.h"
#include "services/sessiond/session/sandbox_io.h"
#include "services/sessiond/session/sandbox_writes.h"
#include "services/sessiond/session/secrets.h"
#include "services/sessiond/session/session_dir.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/common/router_hold.h"

namespace lazaret::cli::session {

// A clean stop asked for from another thread (an attached terminal's stop,
// AttachInput.stop); the supervision loop takes it (supervise.h).
class StopRequests {
 public:
  // Records the first reason and wakes the loop (signals.h).
  void Request(const std::string& reason);
  // The reason, once one was requested.
  std::optional<std::string> Take();

 private:
  absl::Mutex mu_;
  std::optional<std::string> reason_ ABSL_GUARDED_BY(mu_);
};

struct LiveSession {
  // What it was started from.
  std::string runtime_dir;
  std::string workspace_dir;    // the directory the developer named
  std::string explicit_config;  // --config, for the host-path re-check
  std::string approver;         // --approver: "inline", "remote" or empty
  // -p: inbound forwards opened after the profile's own (start.cc).
  std::vector<lazaret::common::v1::PortForward> ports;
  // The caller's environment (StartRequest.env): env:VAR values, TERM,
  // HOME, the host CA variables. Never this process's own.
  HostEnvLookup caller_env = HostEnv;
  // The same environment whole: a `command` secret runs in it.
  CallerEnvironment caller_environment;
  // With a TTY: the pty's first size (the starting terminal's).
  uint32_t rows = 24;
  uint32_t cols = 80;
  // Told about the attached terminals (attach_hub.h); set before the start.
  AttachHub::Events* hub_events = nullptr;
  lazaret::config::v1::ResolvedProfile profile;
  SessionPlan plan;

  // What it holds, in the order it is acquired.
  std::unique_ptr<SessionDir> dir;
  std::unique_ptr<SessionRegistration> registration;
  bool sidecar_created = false;  // teardown removes the sidecar (by name)
  RouterProcess router;
  std::unique_ptr<RouterHold> hold;
  bool policy_attached = false;  // AttachSession was called: the teardown detaches
  // lazaret-mount-helper's AttachSession was called: the teardown detaches
  // the overlays (the last session of the profile unmounts them).
  bool persistence_attached = false;
  // brokerd's AttachSession was called: the teardown detaches the endpoint.
  bool escalation_attached = false;
  // The endpoint brokerd made, as checked (AttachEscalation).
  std::optional<escalation::CheckedEndpoint> escalation_endpoint;
  // The session was a spare (PrepareSpare) that a request adopted: its
  // directory, registration, endpoint, sidecar and hold were made before
  // the request came; StartSession does the rest.
  bool adopted = false;
  // The profile's secrets, resolved (secrets.h); their values are wiped
  // once lazaret-egressd holds them.
  std::unique_ptr<SessionSecrets> secrets;
  // lazaret-egressd's AttachSession was called: the teardown detaches it.
  bool egress_attached = false;
  // The egress proxy's CA (PEM), for the sandbox's trust store.
  std::string egress_ca_pem;
  // The attached terminals, then the sandbox's pty or pipes feeding them
  // (destroyed first: its pump writes to the hub).
  std::unique_ptr<AttachHub> hub;
  std::unique_ptr<SandboxIo> io;
  SandboxWrites writes;
  StopRequests stops;

  // Why it ended before its command did (at most one is the cause).
  int stop_signal = 0;
  // With stop_signal: why, when not the signal itself, as the rest of
  // "stopped ..." ("from an attached terminal", "after 12h with no
  // terminal attached (detached_limit)").
  std::string stop_reason;
  // The sandbox never ran the command (teardown.cc).
  bool never_started = false;
  bool sidecar_lost = false;
  // lazaret-egressd no longer serves the session (it died and was
  // restarted without it): ended, as its intercepted hosts are unreachable
  // and its secrets are not re-sent.
  bool egress_lost = false;
  bool supervisor_lost = false;
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_LIVE_SESSION_H_
