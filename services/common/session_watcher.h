// Following the supervisor's session registry (SupervisorService.
// WatchSessions) from a service that keeps per-session state: a thread that
// reports every session start and end to callbacks, reconnecting when the
// supervisor is away. Runs in the unprivileged services (lazaret-netpolicyd,
// lazaret-brokerd). The events come from the supervisor, Lazaret's own
// service on the private runtime directory; the callbacks still check each
// id before they act on it.
#ifndef LAZARET_SERVICES_COMMON_SESSION_WATCHER_H_
#define LAZARET_SERVICES_COMMON_SESSION_WATCHER_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"

namespace lazaret {

class SessionWatcher {
 public:
  using Callback = std::function<void(const lazaret::supervisor::v1::SessionInfo&)>;
  struct Callbacks {
    // SESSION_EVENT_STARTED, whatever the state: each session registered
    // when the stream opens, then each new one. After a reconnect a session
    // already reported is reported again, so this must be idempotent.
    Callback started;
    // SESSION_EVENT_ENDED; also, after a reconnect, each session reported
    // started that the supervisor no longer lists (it ended while the
    // stream was down).
    Callback ended;
  };

  SessionWatcher(std::string runtime_dir, Callbacks callbacks,
                 std::chrono::milliseconds retry = std::chrono::seconds(2));
  ~SessionWatcher();  // Stop()
  SessionWatcher(const SessionWatcher&) = delete;
  SessionWatcher& operator=(const SessionWatcher&) = delete;

  // Starts the thread. Callbacks run on it, one at a time; they must not
  // call Stop().
  void Start();
  // Cancels the stream and joins the thread. Idempotent.
  void Stop();

 private:
  void Run();
  // After a reconnect: ends every known session the supervisor does not
  // list any more. Best effort (a supervisor without ListSessions is
  // skipped).
  void Reconcile();
  void Started(const lazaret::supervisor::v1::SessionInfo& info);
  void Ended(const lazaret::supervisor::v1::SessionInfo& info);

  const std::string runtime_dir_;
  const Callbacks callbacks_;
  const std::chrono::milliseconds retry_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Sessions reported started and not yet ended (watcher thread only).
  std::map<std::string, lazaret::supervisor::v1::SessionInfo> known_;
  std::thread thread_;
};

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_SESSION_WATCHER_H_
