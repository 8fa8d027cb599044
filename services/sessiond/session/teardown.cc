#include "services/sessiond/session/teardown.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/escalation/broker_client.h"
#include "clients/lazaret/net/egress_client.h"
#include "clients/lazaret/net/netpolicy_client.h"
#include "clients/lazaret/persist/mount_client.h"
#include "services/sessiond/session/console.h"
#include "services/sessiond/session/names.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/session/run_args.h"

namespace lazaret::cli::session {
namespace {

using Clock = std::chrono::steady_clock;

// The sandbox of a session that ended early: removed (its podman client
// exits with it), and its client reaped, killed if it lingers.
void StopSandbox(const LiveSession& s, pid_t sandbox_pid) {
  (void)RemoveContainer(SandboxName(s.plan.id), kSandboxStopGraceSeconds);
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (waitpid(sandbox_pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(sandbox_pid, SIGKILL);
      waitpid(sandbox_pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

void CloseSession(LiveSession* s) {
  // Our hold ends first: should the sandbox still run, its network is
  // closed before podman gets to it.
  s->hold.reset();
  // podman notices a killed container only at its next poll (~100 ms);
  // stopping the router ourselves and removing a container that has
  // already exited is what keeps the teardown short. Precondition: the
  // sandbox has exited or been removed (it uses the sidecar's netns).
  s->router.Kill(2000);
  Trace("router stopped");
  // Nothing of the session runs any more: egressd ends the session's
  // proxy (its connections, its CA; the secrets' values are wiped) ...
  if (s->egress_attached) {
    if (absl::Status st = net::DetachEgressBestEffort(s->runtime_dir, s->plan.id); !st.ok()) {
      Say(std::string(st.message()));
    }
    s->egress_attached = false;
  }
  // ... and netpolicyd forgets the session's policy.
  if (s->policy_attached) {
    if (absl::Status st = net::DetachSessionBestEffort(s->runtime_dir, s->plan.id); !st.ok()) {
      Say(std::string(st.message()));
    }
    s->policy_attached = false;
  }
  // And brokerd ends the escalation endpoint: socket and certificates gone,
  // the certificate's serial forgotten, pending requests denied.
  if (s->escalation_attached) {
    if (absl::Status st = escalation::DetachSessionBestEffort(s->runtime_dir, s->plan.id);
        !st.ok()) {
      Say(std::string(st.message()));
    }
    s->escalation_attached = false;
  }
  // And the mount helper lets go of the overlays: the last session of the
  // profile unmounts them (the sandbox has exited: its mounts are gone
  // with it, whether or not podman has removed the container yet).
  if (s->persistence_attached) {
    if (absl::Status st = persist::DetachSessionBestEffort(s->runtime_dir, s->plan.id); !st.ok()) {
      Say(std::string(st.message()));
    }
    s->persistence_attached = false;
  }
}

void ReleaseSession(LiveSession* s, bool keep_session_dir) {
  CloseSession(s);
  if (s->sidecar_created) {
    // The sidecar with everything that depends on it - the sandbox, if it
    // is still there - in one call: podman removes the dependents first, so
    // the sandbox never outlives its sidecar.
    if (absl::Status st = RemoveWithDependents(SidecarName(s->plan.id), 0); !st.ok()) {
      Say(std::string(st.message()));
    }
    s->sidecar_created = false;
  }
  if (s->dir != nullptr && !keep_session_dir) {
    // A start cut short still removes its placeholders (the views live in
    // the session directory).
    s->writes.EndHeldPaths();
    if (absl::Status st = s->dir->Remove(); !st.ok()) Say(std::string(st.message()));
    s->dir.reset();
  }
  // Only once nothing of the session is left: until then, if this process
  // dies, the supervisor's reaper finishes the job (session.json tells it
  // where to write the agent's commits back).
  if (s->dir == nullptr && s->registration != nullptr) {
    (void)s->registration->Unregister();
    s->registration.reset();
  }
}

int EndSession(LiveSession* s, pid_t sandbox_pid, int code) {
  // 5. Teardown: the sandbox (its podman client exits with it), the
  // sidecar, the session directory; then the agent's commits.
  const bool ended_early =
      s->stop_signal != 0 || s->sidecar_lost || s->supervisor_lost || s->egress_lost;
  if (ended_early) StopSandbox(*s, sandbox_pid);
  // The sandbox's last output reaches the attached terminals before
  // Lazaret's lines.
  if (s->io != nullptr) s->io->Finish();
  Trace("sandbox output finished");
  // Whether the command ran at all: podman's own failures (125), and a
  // runtime that cannot start a container (126, 127), leave the sandbox
  // "created" or not there at all; the command's own 125-127 come from a
  // container that started.
  bool never_started = false;
  if (!ended_early && code >= 125 && code <= 127) {
    absl::StatusOr<std::optional<std::string>> state = ContainerStatus(SandboxName(s->plan.id));
    never_started = state.ok() && (!state->has_value() || **state == "created");
  }
  // The router stopped and the services detached; the containers, the
  // session directory (and with it the registry's claim on this session)
  // go after the exit is reported (ReleaseSession): if this process dies
  // before then, the supervisor's reaper finds them and does the
  // write-back and the workspace scan itself.
  CloseSession(s);
  // The sandbox's environment values leave the disk before the exit is
  // reported (the containers that read them are not running).
  if (s->dir != nullptr) {
    if (absl::Status st = s->dir->RemoveEnvFile(); !st.ok()) Say(std::string(st.message()));
  }
  Trace("router stopped, services detached");
  s->writes.WriteBackNow(/*final_attempt=*/true);
  s->writes.write_back_log().Print();
  Trace("written back");
  // What the agent wrote to the paths host programs act on: into the
  // profile's held store, never the folder; then the lines saying so.
  s->writes.EndHeldPaths();
  Trace("held paths captured");
  s->writes.ScanWorkspaceAtEnd();
  Trace("workspace scanned");
  // The agent's commits are on the host and the workspace is scanned: the
  // next session on this repository need not wait for the containers'
  // removal.
  s->writes.ReleaseRepository();

  if (s->supervisor_lost) {
    Say("the supervisor (lazaret up) is gone or no longer knows this session; the session was "
        "ended (a sandbox never runs without a supervisor that would reap it)");
  } else if (s->sidecar_lost) {
    Say("the network sidecar stopped answering; the session was ended (a sandbox never outlives "
        "its network sidecar)");
  } else if (s->egress_lost) {
    Say("the egress proxy (lazaret-egressd) stopped serving this session; the session was ended "
        "(its secrets are handed over once and never re-sent; until the end, its intercepted "
        "hosts were unreachable)");
  } else if (s->stop_signal != 0) {
    Say(absl::StrCat("session ", s->plan.id, " ", EndReason(*s)));
  } else if (never_started) {
    const SandboxSpec& sandbox = s->plan.sandbox;
    if (!ImageExists(sandbox.image)) {
      Say(MissingImageHint(sandbox.image));
    } else {
      Say(absl::StrCat("the sandbox never started (podman exit ", code,
                       "; its error is above): the command did not run. Lazaret runs agents only "
                       "under gVisor (",
                       sandbox.runsc_path, ") and never falls back to runc or to the host."));
    }
    code = kRunFailed;
    s->never_started = true;
  }
  return code;
}

std::string EndReason(const LiveSession& s) {
  if (s.supervisor_lost) return "ended: the supervisor (lazaret up) is gone";
  if (s.sidecar_lost) return "ended: the network sidecar stopped answering";
  if (s.egress_lost) return "ended: the egress proxy stopped serving it";
  if (!s.stop_reason.empty()) return absl::StrCat("stopped ", s.stop_reason);
  if (s.stop_signal != 0) return absl::StrCat("stopped by ", strsignal(s.stop_signal));
  if (s.never_started) return "the sandbox never started";
  return "";
}

}  // namespace lazaret::cli::session
