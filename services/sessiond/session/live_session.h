// One running `lazaret run` session: its plan and every resource it holds,
// in the order start.h acquires them; supervise.h watches them and
// teardown.h releases them in the order that keeps the agent's work. Runs
// in the `lazaret` CLI, as the user; only this process touches it.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_LIVE_SESSION_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_LIVE_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "clients/lazaret/approve/inline_approver.h"
#include "lazaret/common/v1/common.pb.h"
#include "services/sessiond/session/plan.h"
#include "services/sessiond/session/pty_proxy.h"
#include "services/sessiond/session/registry_client.h"
#include "services/sessiond/session/router_watch.h"
#include "services/sessiond/session/sandbox_writes.h"
#include "services/sessiond/session/session_dir.h"
#include "services/sessiond/session/terminal.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/common/router_hold.h"

namespace lazaret::cli::session {

struct LiveSession {
  // What it was started from.
  std::string runtime_dir;
  std::string workspace_dir;    // the directory the developer named
  std::string explicit_config;  // --config, for the host-path re-check
  std::string approver;         // --approver: "inline", "remote" or empty
  // -p: inbound forwards opened after the profile's own (start.cc).
  std::vector<lazaret::common::v1::PortForward> ports;
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
  SavedTerminalMode terminal;
  // With a TTY: the pty the sandbox's podman runs on (pty_proxy.h).
  std::unique_ptr<PtyProxy> pty;
  // With a TTY and escalation on, unless remote approval was asked for: the
  // inline prompt (clients/lazaret/approve/inline_approver.h).
  std::unique_ptr<approve::InlineApprover> inline_approver;
  SandboxWrites writes;

  // Why it ended before its command did (at most one is the cause).
  int stop_signal = 0;
  bool sidecar_lost = false;
  bool supervisor_lost = false;
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_LIVE_SESSION_H_
