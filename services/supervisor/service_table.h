// The services lazaret-supervisord runs: starts each, health-checks it over
// its socket, restarts a crashed or unhealthy one with backoff and stops
// them all at shutdown. Runs in the supervisor (no effective capability;
// services inherit only what the supervisor delegates). A service started
// through the launcher (launcher.h: lazaret-sessiond, which needs what
// `lazaret up` had) is treated the same, except that the launcher starts
// and signals it and reports its pid and exit. Trusts the service binaries
// next to itself (DefaultServiceSet) and the launcher's reports as far as
// ParseLauncherReport accepts them; a service's health answer decides only
// whether it is restarted.
#ifndef LAZARET_SERVICES_SUPERVISOR_SERVICE_TABLE_H_
#define LAZARET_SERVICES_SUPERVISOR_SERVICE_TABLE_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "services/spawn/spawn.h"
#include "services/supervisor/backoff.h"
#include "services/supervisor/launcher.h"
#include "services/supervisor/supervisor.h"

namespace lazaret::supervisor {

// "exited with status N", "killed by <signal>" or "stopped".
std::string DescribeExit(int wstatus);

// A child of the supervisor that is not one of its services (the launcher).
struct OtherExit {
  pid_t pid = -1;
  int wstatus = 0;
};

// Every method but Status is called from the supervision loop thread only.
class ServiceTable {
 public:
  // `env` is the services' environment (service_environment.h). Each
  // service's argv and envp are built here, once, before any fork.
  // `launcher` starts the services marked via_launcher (none: nullptr);
  // it must outlive the table.
  static absl::StatusOr<std::unique_ptr<ServiceTable>> Create(const std::string& runtime_dir,
                                                              std::vector<ManagedService> services,
                                                              std::vector<std::string> env,
                                                              LauncherClient* launcher);

  ServiceTable(const ServiceTable&) = delete;
  ServiceTable& operator=(const ServiceTable&) = delete;

  void StartAll();
  // Collects every exited child. A service that exited is scheduled for a
  // restart after its backoff; the exits of other children are returned.
  std::vector<OtherExit> Reap();
  // Reads one report of the launcher and applies it to the service it
  // started. False when the launcher is gone (or wrote something that is
  // not a report): its services are then gone too.
  bool ReadLauncherReport();
  // Restarts what is due and health-checks what is running.
  void Tick();
  // SIGTERM to every service, SIGKILL after the grace period, then make sure
  // no socket is left behind by one that could not clean up. `signal_fd`
  // (the loop's signalfd) wakes the wait when a child exits.
  void StopAll(int signal_fd);

  // For GetStatus, from any thread: every service and whether all are healthy.
  void Status(v1::GetStatusResponse* resp);

 private:
  using Clock = std::chrono::steady_clock;

  // Runtime state of one managed service. Owned by the supervision loop
  // thread; read by Status under mu_.
  struct Child {
    ManagedService spec;
    std::string socket;
    // The command, prepared once, before any fork (services/spawn);
    // empty for a service the launcher starts.
    std::optional<cli::PreparedChild> command;
    pid_t pid = -1;
    // The launcher was asked to start it and has not reported yet.
    bool start_pending = false;
    v1::ServiceState state = v1::SERVICE_STATE_STOPPED;
    uint32_t restarts = 0;
    int strikes = 0;
    Clock::time_point started{};
    Clock::time_point next_health{};
    Clock::time_point next_start{};
    Backoff backoff;
    std::string last_exit;
  };

  ServiceTable(std::vector<Child> children, LauncherClient* launcher)
      : launcher_(launcher), children_(std::move(children)) {}

  bool AnyRunningLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartLocked(Child& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SIGTERM or SIGKILL to a running service, itself or through the launcher.
  void SignalLocked(Child& c, int sig) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<OtherExit> ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Service `c` ended with `wstatus` (or could not be started: `why`).
  void ExitedLocked(Child& c, const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ReadLauncherReportLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The service the launcher starts, if any.
  Child* LaunchedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  static constexpr auto kBackoffResetAfter = std::chrono::seconds(60);
  static constexpr auto kStartTimeout = std::chrono::seconds(10);

  LauncherClient* const launcher_;
  std::mutex mu_;
  std::vector<Child> children_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_SERVICE_TABLE_H_
