// The services lazaret-supervisord runs: starts each, health-checks it over
// its socket, restarts a crashed or unhealthy one with backoff and stops
// them all at shutdown. Runs in the supervisor (no effective capability;
// services inherit only what the supervisor delegates). Trusts the service
// binaries next to itself (DefaultServiceSet); a service's health answer
// decides only whether it is restarted.
#ifndef LAZARET_SERVICES_SUPERVISOR_SERVICE_TABLE_H_
#define LAZARET_SERVICES_SUPERVISOR_SERVICE_TABLE_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "services/supervisor/backoff.h"
#include "services/supervisor/supervisor.h"

namespace lazaret::supervisor {

// "exited with status N", "killed by <signal>" or "stopped".
std::string DescribeExit(int wstatus);

// A child of the supervisor that is not one of its services (the reaper).
struct OtherExit {
  pid_t pid = -1;
  int wstatus = 0;
};

// Every method but Status is called from the supervision loop thread only.
class ServiceTable {
 public:
  // `env` is the services' environment (service_environment.h). Each
  // service's argv and envp are built here, once, before any fork.
  ServiceTable(const std::string& runtime_dir, std::vector<ManagedService> services,
               std::vector<std::string> env);

  ServiceTable(const ServiceTable&) = delete;
  ServiceTable& operator=(const ServiceTable&) = delete;

  void StartAll();
  // Collects every exited child. A service that exited is scheduled for a
  // restart after its backoff; the exits of other children are returned.
  std::vector<OtherExit> Reap();
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
    // argv/envp are built once, before any fork, so that nothing between fork
    // and execve allocates.
    std::vector<std::string> argv_storage;
    std::vector<char*> argv;
    pid_t pid = -1;
    v1::ServiceState state = v1::SERVICE_STATE_STOPPED;
    uint32_t restarts = 0;
    int strikes = 0;
    Clock::time_point started{};
    Clock::time_point next_health{};
    Clock::time_point next_start{};
    Backoff backoff;
    std::string last_exit;
  };

  bool AnyRunningLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartLocked(Child& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<OtherExit> ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  static constexpr auto kBackoffResetAfter = std::chrono::seconds(60);
  static constexpr auto kStartTimeout = std::chrono::seconds(10);

  // The services' environment (service_environment.h), built once before any fork.
  std::vector<std::string> env_storage_;
  std::vector<char*> envp_;
  std::mutex mu_;
  std::vector<Child> children_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_SERVICE_TABLE_H_
