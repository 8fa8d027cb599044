// The supervisor's reaping of sessions whose owner (the session's worker
// process in lazaret-sessiond) is gone: at startup every session an
// earlier service set left behind, later each whose owner's pidfd fires,
// and at shutdown those whose owner dies without unregistering. Each is
// handed to lazaret-sessiond's SessionService.Reap
// (protos/lazaret/session/v1/session.proto), which writes the Git Shadow
// back, scans the workspace and removes what the session left
// (services/sessiond/session/reap.h) and refuses a session whose worker
// lives. The calls run one at a time on a thread of their own, so the
// supervision loop never waits on a reap; while sessiond does not answer
// (it is being restarted) a call is retried with backoff for a bounded
// time. Runs in lazaret-supervisord (no effective capability); trusts
// sessiond, a service of the same user that the supervisor started, for
// the outcome it reports, which decides only what is logged.
#ifndef LAZARET_SERVICES_SUPERVISOR_SESSION_REAPING_H_
#define LAZARET_SERVICES_SUPERVISOR_SESSION_REAPING_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "services/supervisor/registry.h"

namespace lazaret::supervisor {

// One Reap of a session, made from the reaping thread; Cancel comes from
// another thread.
class SessionReaper {
 public:
  virtual ~SessionReaper() = default;
  // The reap's notices when it is done. FAILED_PRECONDITION: the session's
  // worker lives; UNAVAILABLE: nobody answers; CANCELLED after Cancel.
  virtual absl::StatusOr<std::vector<std::string>> Reap(const std::string& id) = 0;
  // Ends the call in progress, and every later one, with CANCELLED.
  virtual void Cancel() = 0;
};

// SessionService.Reap on lazaret-sessiond's socket `socket`, each call
// bounded by `timeout` (sessiond bounds a reap at 180 s itself).
std::unique_ptr<SessionReaper> SessiondReaper(std::string socket, std::chrono::seconds timeout);

// How long to keep asking.
struct ReapPolicy {
  // The wait before asking an unavailable sessiond again; doubles up to
  // `max_retry`.
  std::chrono::milliseconds first_retry{200};
  std::chrono::milliseconds max_retry{5000};
  // After this long without an answer the session is left for `lazaret
  // clean`, and the log says so.
  std::chrono::milliseconds give_up_after{std::chrono::minutes(3)};
  // A session whose owner the supervisor saw end, but which sessiond still
  // takes for live (it has not noticed its worker's exit yet), is asked
  // again for this long.
  std::chrono::milliseconds owner_alive_grace{3000};
  // At shutdown: how long the reaps already handed over may take.
  std::chrono::milliseconds drain_timeout{std::chrono::seconds(60)};
  // At shutdown: how long live sessions get to end themselves.
  std::chrono::milliseconds session_stop_grace{std::chrono::seconds(30)};
};

class SessionReaping {
 public:
  // Starts the reaping thread. Precondition: capabilities already dropped.
  SessionReaping(std::string runtime_dir, SessionRegistry* registry,
                 std::unique_ptr<SessionReaper> reaper, ReapPolicy policy = {});
  // Stops the thread (as Drain with no time left) if StopSessions did not.
  ~SessionReaping();

  SessionReaping(const SessionReaping&) = delete;
  SessionReaping& operator=(const SessionReaping&) = delete;

  // Every session directory left in the runtime directory: each is handed
  // over (sessiond refuses a live one).
  void ReapLeftoverSessions();
  // The owner of session `id` is gone, however it ended: reap it now.
  void OwnerGone(const std::string& id);

  // Before the services stop: every live session's owner is asked to end
  // its session (its own teardown and write-back); one that dies without
  // unregistering is reaped; then the reaps handed over are let finish
  // (bounded) and the thread ends.
  void StopSessions();

  // Waits until every reap handed over is done or `timeout` passed, then
  // cancels what remains and ends the thread. Called by StopSessions.
  void Drain(std::chrono::milliseconds timeout);

 private:
  struct Job {
    std::string id;
    // The supervisor saw the owner end (so a refusal as live is sessiond
    // not having noticed yet).
    bool owner_seen_gone = false;
  };

  void Enqueue(Job job);
  void Loop();
  void ReapOne(const Job& job);
  // Waits `delay` unless the thread is told to stop; false when told.
  bool Pause(std::chrono::milliseconds delay);

  const std::string runtime_dir_;
  SessionRegistry* const registry_;
  const std::unique_ptr<SessionReaper> reaper_;
  const ReapPolicy policy_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  // No more work: the thread ends once the queue is empty.
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  // Stop now: the thread drops what is queued and stops retrying.
  bool abandon_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_SESSION_REAPING_H_
