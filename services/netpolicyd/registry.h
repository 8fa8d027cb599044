// lazaret-netpolicyd's sessions: attach (gather the inputs, compile, apply,
// open the DNS relay), reload, detach; a thread that follows the
// supervisor's session registry (ENDED forgets a session; at start the
// sessions already ATTACHED are attached again, so a restarted netpolicyd
// picks its sessions up), and a ticker that re-applies when a live rule or
// a name route expires. Runs in lazaret-netpolicyd, unprivileged. Callers
// name sessions by id only: the id is checked, and the record, the profile
// and the router socket come from the supervisor, configd and the runtime
// directory, never from the request.
#ifndef LAZARET_SERVICES_NETPOLICYD_REGISTRY_H_
#define LAZARET_SERVICES_NETPOLICYD_REGISTRY_H_

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "services/common/session_watcher.h"
#include "services/netpolicyd/host_monitor.h"
#include "services/netpolicyd/relay.h"
#include "services/netpolicyd/session.h"
#include "services/netpolicyd/trace_sink.h"

namespace lazaret::netpolicyd {

struct RegistryOptions {
  SessionOptions session;
  std::string resolv_conf = "/etc/resolv.conf";
  int dns_workers = 8;
  size_t dns_queue = 1024;
  // Follow the supervisor's WatchSessions (off in tests without one).
  bool watch_supervisor = true;
  std::chrono::milliseconds tick{1000};
  // Bind each session's trace socket (trace_sink.h) at attach; off in
  // tests without a session directory.
  bool trace_sinks = false;
  // The host's addresses and networks, followed live (host_monitor.h), and
  // the threads that re-apply every session when they change.
  HostMonitor::Options host_monitor;
  int policy_workers = 4;
  // Called with a session's id when it is detached or ends (its inbound
  // port forwards close).
  std::function<void(const std::string&)> on_detach;
};

class Registry {
 public:
  Registry(std::string runtime_dir, RegistryOptions options);
  ~Registry();  // Stop()
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Takes the first snapshot of the host's networks (an attach fails while
  // there is none), starts following them, the supervisor watch (if
  // enabled) and the expiry ticker.
  void Start();
  void Stop();

  // Attaches the session, or re-applies it when attached already.
  absl::StatusOr<lazaret::netpolicy::v1::PolicyApplied> Attach(const std::string& id);
  absl::StatusOr<lazaret::netpolicy::v1::PolicyApplied> Reload(const std::string& id);
  absl::Status Detach(const std::string& id);
  absl::StatusOr<std::shared_ptr<Session>> Find(const std::string& id) const;
  std::vector<std::shared_ptr<Session>> List() const;
  // Where ended sessions' egress logs are read from (empty: nowhere).
  const std::string& log_dir() const { return options_.session.log.dir; }

 private:
  struct Entry {
    std::shared_ptr<Session> session;
    std::unique_ptr<DnsRelay> relay;
    std::unique_ptr<TraceSink> trace;
  };
  // Reads the session's inputs from the supervisor, configd, the host and
  // the router.
  absl::StatusOr<SessionInputs> Gather(const std::string& id, Session& session);
  // The watcher's STARTED: a session ATTACHED before this netpolicyd ran.
  void SessionStarted(const lazaret::supervisor::v1::SessionInfo& info);
  void Tick();
  // The host monitor (started on demand when Start could not); an error
  // says why the host's networks are not known.
  absl::Status EnsureHostMonitor();
  // Hands every attached session (or one) the latest host snapshot, on
  // the policy pool.
  void SpreadHostNetworks(const std::vector<std::shared_ptr<Session>>& sessions);
  // The trace socket of a session being attached (trace_sink.h).
  absl::StatusOr<std::unique_ptr<TraceSink>> OpenTraceSink(const std::shared_ptr<Session>& session);

  const std::string runtime_dir_;
  const RegistryOptions options_;
  WorkerPool pool_;
  WorkerPool policy_pool_;  // host network changes, never behind DNS work
  std::mutex attach_mu_;  // one attach or reload at a time
  std::mutex monitor_mu_;
  std::shared_ptr<HostMonitor> monitor_ ABSL_GUARDED_BY(monitor_mu_);
  mutable std::mutex mu_;
  std::map<std::string, Entry> sessions_ ABSL_GUARDED_BY(mu_);
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<SessionWatcher> watcher_;
  std::thread tick_thread_;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_REGISTRY_H_
