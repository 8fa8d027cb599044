#include "services/sessiond/session/supervise.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "clients/lazaret/net/egress_client.h"
#include "services/spawn/subprocess.h"
#include "services/sessiond/session/attach_hub.h"
#include "services/sessiond/session/run_args.h"
#include "services/sessiond/session/signals.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::session {
namespace {

using Clock = std::chrono::steady_clock;

// The waiting loop's tick: Git Shadow WriteBack and a sidecar health check.
constexpr auto kTick = std::chrono::seconds(2);
// Consecutive failed sidecar health checks that end the session.
constexpr int kSidecarMaxFailures = 2;
// Consecutive ticks on which the supervisor did not know the session (it
// died or was restarted) that end it: a sandbox never runs without one.
constexpr int kRegistryMaxFailures = 2;
// Consecutive ticks on which lazaret-egressd did not serve the session (it
// died, or was restarted without it) that end a session with an egress
// proxy.
constexpr int kEgressMaxFailures = 2;
// The setuid/setgid/capability sweep of the sandbox-writable trees runs every
// this many ticks (a walk of the whole tree; the end-of-session scan catches
// what the last interval left), and within a duty cycle of its own
// (sandbox_writes.cc).
constexpr int kPrivilegeSweepTicks = 5;

}  // namespace

void StopRequests::Request(const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!reason_.has_value()) reason_ = reason;
  }
  WakeSupervision();
}

std::optional<std::string> StopRequests::Take() {
  absl::MutexLock lock(&mu_);
  return reason_;
}

int Supervise(LiveSession* s, pid_t sandbox_pid) {
  const sigset_t set = SessionSignals();
  const UnattendedPolicy unattended =
      UnattendedPolicyOf(s->profile.session(), /*stream=*/!s->plan.sandbox.tty);
  auto next_tick = Clock::now() + kTick;
  int ticks = 0;
  int sidecar_failures = 0;
  int registry_failures = 0;
  int egress_failures = 0;
  while (true) {
    int status = 0;
    const pid_t w = waitpid(sandbox_pid, &status, WNOHANG);
    if (w == sandbox_pid) return ExitCodeOf(status);
    // A clean stop, the same as SIGTERM's: asked for by an attached
    // terminal, or the session was left unattended (the profile's
    // [session] rule).
    if (std::optional<std::string> reason = s->stops.Take(); reason.has_value()) {
      s->stop_signal = SIGTERM;
      s->stop_reason = *std::move(reason);
      return 128 + SIGTERM;
    }
    absl::Time stop_at = absl::InfiniteFuture();
    if (s->hub != nullptr) {
      const Attendance attendance = s->hub->attendance();
      stop_at = UnattendedStopAt(unattended, attendance);
      if (absl::Now() >= stop_at) {
        s->stop_signal = SIGTERM;
        s->stop_reason = UnattendedStopReason(unattended, attendance);
        return 128 + SIGTERM;
      }
    }
    const auto now = Clock::now();
    if (now >= next_tick) {
      {
        // A stop request never waits on host git (the final write-back
        // after teardown is not interruptible).
        InterruptibleBySignals interruptible;
        s->writes.WriteBackNow(/*final_attempt=*/false);
      }
      // New catalogue entries at the workspace root: held and removed
      // every tick; deeper ones by the sweep.
      s->writes.CheckHeldPaths();
      if (++ticks % kPrivilegeSweepTicks == 0) {
        s->writes.SweepPrivilegeBits();
        s->writes.SweepHeldPaths();
      }
      if (s->router.Exited(0)) {
        s->sidecar_lost = true;
        return kRunFailed;
      }
      if (CheckHealth(s->dir->router_socket(), 1000).ok()) {
        sidecar_failures = 0;
      } else if (++sidecar_failures >= kSidecarMaxFailures) {
        s->sidecar_lost = true;
        return kRunFailed;
      }
      if (s->registration->Check().ok()) {
        registry_failures = 0;
      } else if (++registry_failures >= kRegistryMaxFailures) {
        s->supervisor_lost = true;
        return kRunFailed;
      }
      if (s->egress_attached) {
        if (net::EgressServes(s->runtime_dir, s->plan.id)) {
          egress_failures = 0;
        } else if (++egress_failures >= kEgressMaxFailures) {
          s->egress_lost = true;
          return kRunFailed;
        }
      }
      next_tick = Clock::now() + kTick;
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(next_tick - now);
    if (stop_at != absl::InfiniteFuture()) {
      left = std::min(left, std::chrono::nanoseconds(std::max<int64_t>(
                                0, absl::ToInt64Nanoseconds(stop_at - absl::Now()))));
    }
    timespec ts{static_cast<time_t>(left.count() / 1000000000),
                static_cast<long>(left.count() % 1000000000)};
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      s->stop_signal = sig;
      return 128 + sig;
    }
  }
}

}  // namespace lazaret::cli::session
