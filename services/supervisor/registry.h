// The session registry of lazaret-supervisord: which session worker (the
// `lazaret-sessiond --session-worker` process of the session) owns
// which session, watched through a pidfd of that process. Runs in the
// supervisor (no capabilities); its callers are the supervisor's gRPC
// handlers (peers already checked to be the supervisor's own uid) and its
// supervision loop. A registering peer is trusted to be the user, not to
// tell the truth: the record is validated field by field, the owner pid
// must be the calling process itself (its pidfd comes from SO_PEERPIDFD),
// and every name and path a service later acts on is derived here from the
// validated id.
#ifndef LAZARET_SERVICES_SUPERVISOR_REGISTRY_H_
#define LAZARET_SERVICES_SUPERVISOR_REGISTRY_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/common/v1/common.pb.h"
#include "lazaret/supervisor/v1/supervisor.pb.h"
#include "services/common/router_hold.h"
#include "services/common/unix_server.h"

namespace lazaret::supervisor {

// Validates a record sent to RegisterSession; the message says what is wrong.
absl::Status ValidateSessionRecord(const common::v1::SessionRecord& record);

class SessionRegistry {
 public:
  // `wake_fd` (an eventfd) is written whenever the set of pidfds changes.
  SessionRegistry(std::string runtime_dir, int wake_fd)
      : runtime_dir_(std::move(runtime_dir)), wake_fd_(wake_fd) {}
  ~SessionRegistry();

  // Takes ownership of peer.pidfd whatever the outcome.
  absl::StatusOr<v1::SessionInfo> Register(const common::v1::SessionRecord& record,
                                           const PeerProcess& peer);
  // The owner's router answers: open the supervisor's hold on it.
  absl::Status Attach(const std::string& id, const PeerProcess& peer);
  absl::Status Unregister(const std::string& id, const PeerProcess& peer);
  // SIGTERM to the owner through its pidfd; returns its pid.
  absl::StatusOr<int> Stop(const std::string& id);
  absl::StatusOr<v1::SessionInfo> Get(const std::string& id) const;
  std::vector<v1::SessionInfo> List() const;

  // For the supervision loop: the (id, pidfd) of every session whose owner
  // is still being watched.
  std::vector<std::pair<std::string, int>> WatchedPidfds() const;
  // The owner is gone: stop watching, end the supervisor's hold, mark the
  // session REAPING. False when the id is not (or no longer) watched.
  bool BeginReap(const std::string& id);
  // The reap of this session is done (session_reaping.h): forget it.
  void Forget(const std::string& id);
  // SIGTERM to every owner (shutdown); returns how many were signalled.
  int StopAll();
  bool empty() const;

  // WatchSessions: the current sessions as STARTED, then every event,
  // until `cancelled()` is true or the registry shuts down. Returns false if
  // a write failed.
  template <typename Writer, typename Cancelled>
  bool Watch(Writer&& write, Cancelled&& cancelled);
  // Ends every Watch.
  void ShutdownWatchers();

 private:
  struct Entry {
    v1::SessionInfo info;
    int pidfd = -1;
    std::unique_ptr<RouterHold> hold;
  };
  v1::SessionInfo InfoFor(const common::v1::SessionRecord& record) const;
  absl::StatusOr<Entry*> OwnedBy(const std::string& id, const PeerProcess& peer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Publish(v1::SessionEventKind kind, const v1::SessionInfo& info)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Wake() const;

  static constexpr size_t kMaxEvents = 1024;

  const std::string runtime_dir_;
  const int wake_fd_;
  mutable std::mutex mu_;
  std::condition_variable events_cv_;
  std::map<std::string, Entry> sessions_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::SessionEvent> events_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;  // seq of the event after events_.back()
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

template <typename Writer, typename Cancelled>
bool SessionRegistry::Watch(Writer&& write, Cancelled&& cancelled) {
  std::vector<v1::SessionEvent> batch;
  uint64_t seen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, e] : sessions_) {
      v1::SessionEvent ev;
      ev.set_kind(v1::SESSION_EVENT_STARTED);
      *ev.mutable_session() = e.info;
      batch.push_back(std::move(ev));
    }
    seen = next_seq_;
  }
  while (true) {
    for (const auto& ev : batch) {
      if (!write(ev)) return false;
    }
    batch.clear();
    std::unique_lock<std::mutex> lock(mu_);
    // Cancellation of a synchronous call is only observable by asking, so
    // the wait wakes at least every 200 ms to ask.
    events_cv_.wait_for(lock, std::chrono::milliseconds(200),
                        [&] { return shutdown_ || next_seq_ != seen; });
    if (shutdown_ || cancelled()) return true;
    const uint64_t first = next_seq_ - events_.size();
    if (seen < first) return false;  // fell behind the bounded buffer
    for (uint64_t s = seen; s < next_seq_; ++s) batch.push_back(events_[s - first]);
    seen = next_seq_;
  }
}

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_REGISTRY_H_
