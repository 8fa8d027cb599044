// The session workers of lazaret-sessiond, and the one long-lived thread
// that forks them, reads their reports and reaps them. Runs in
// lazaret-sessiond, as the user who ran `lazaret up`. Workers are forked
// from this one thread because a worker's death signal (PR_SET_PDEATHSIG,
// SIGTERM) fires when the thread that forked it ends, not the process:
// gRPC's request threads come and go, this thread lives until sessiond
// stops, so a worker ends its session cleanly exactly when sessiond is
// gone. Reports are this binary's own, trusted as far as their form
// (bounded packets that parse); the pid a worker claims is replaced by the
// one this table knows.
#ifndef LAZARET_SERVICES_SESSIOND_WORKER_TABLE_H_
#define LAZARET_SERVICES_SESSIOND_WORKER_TABLE_H_

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "lazaret/session/v1/session.pb.h"
#include "services/sessiond/worker_launch.h"

namespace lazaret::sessiond {

// A worker, as long as this table keeps it (until a while after its exit).
using WorkerKey = uint64_t;

class WorkerTable {
 public:
  // Starts the worker thread. `forget_after`: how long an exited worker's
  // exit stays visible to a caller still waiting for it.
  static absl::StatusOr<std::unique_ptr<WorkerTable>> Create(
      WorkerCommand command, absl::Duration forget_after = absl::Seconds(60));
  // Shutdown(), then joins the thread.
  ~WorkerTable();
  WorkerTable(const WorkerTable&) = delete;
  WorkerTable& operator=(const WorkerTable&) = delete;

  // Starts a worker on the worker thread and hands it `request` (a
  // serialized StartRequest). Unavailable once the table shuts down.
  absl::StatusOr<WorkerKey> Launch(std::string request);

  // Spares (docs/architecture.md "Spare sidecar"): at most one worker
  // prepared ahead for the next request whose SpareKey is `key`. Once
  // worker `after` has exited (its session torn down: a spare prepared
  // while a session starts or ends would slow both on a small machine),
  // starts one with `spare_request` (a serialized StartRequest with spare
  // set) unless a live spare already has `key`; a spare of another key is
  // told to end (SIGTERM: it removes what it prepared). Nothing once the
  // table shuts down, nor while spares are paused (kUnusedSparesBeforePause).
  void PrepareSpareAfterExit(WorkerKey after, std::string spare_request, std::string key);
  // Hands `request` to the ready spare of `key` and makes it an ordinary
  // worker; nullopt when there is none ready (one still preparing is left
  // to finish) or it could not be given the request (it is told to end).
  std::optional<WorkerKey> AdoptSpare(const std::string& key, const std::string& request);
  // Tells every live spare not of `key` to end, and drops the spares of
  // other keys still to be made after a session's exit (a request of
  // another key came: its spare is made once that session ends).
  void EndSparesExcept(const std::string& key);
  // The spare, for List; nullopt when there is none.
  std::optional<session::v1::SpareInfo> Spare() const;

  // What a Start caller sees of its worker.
  struct StartProgress {
    // Events not taken before, in order; the last is started, plan or
    // failed once the worker sent one (nothing follows it).
    std::vector<session::v1::StartEvent> events;
    bool exited = false;
    int wait_status = 0;  // when exited; -1 when the worker was forgotten
    // An adopted spare declined the request: it is ending; the caller
    // starts a new worker.
    bool declined = false;
  };
  // Waits until `key` has events not yet taken, has exited, or `deadline`
  // passed, and takes the events.
  StartProgress TakeStartEvents(WorkerKey key, absl::Time deadline);

  // Sends `signal` through the worker's pidfd. NotFound when it exited.
  absl::Status Signal(WorkerKey key, int signal);

  // The live worker whose session is `session_id` (from its reports).
  std::optional<WorkerKey> FindLive(const std::string& session_id) const;

  // Waits until the worker exited (true; also once it was forgotten) or
  // `deadline` passed (false).
  bool WaitExited(WorkerKey key, absl::Time deadline) const;

  // The latest SessionInfo of every live worker that reported one.
  std::vector<session::v1::SessionInfo> List() const;

  // SIGTERM to every worker (each ends its session cleanly), waits up to
  // `grace` for them to exit, then ends the worker thread, whose end is
  // every remaining worker's death signal. Launch refuses from now on.
  void Shutdown(absl::Duration grace = absl::Seconds(4));

 private:
  struct Worker {
    LaunchedWorker process;
    std::optional<session::v1::SessionInfo> info;
    std::deque<session::v1::StartEvent> start_events;
    bool start_done = false;  // started, plan or failed was queued
    bool exited = false;
    int wait_status = 0;
    absl::Time exited_at;
    // A spare: the key of the requests it is for, its session id once
    // ready. Cleared when it is adopted or told to end.
    std::optional<std::string> spare_key;
    std::string spare_workspace;
    std::string spare_id;
    bool declined = false;
    bool adopted = false;  // AdoptSpare handed it a request
    // PrepareSpareAfterExit: the spare's request and key.
    std::optional<std::pair<std::string, std::string>> spare_after_exit;
  };
  struct LaunchJob {
    std::string request;
    bool done = false;
    absl::StatusOr<WorkerKey> result = absl::UnknownError("not launched");
  };

  WorkerTable(WorkerCommand command, absl::Duration forget_after, int wake_fd);
  void Wake();
  void Loop();
  void RunLaunchJobs();
  // A worker just launched, into the table under a new key.
  WorkerKey Add(const LaunchedWorker& launched) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Launches the spares that exited workers asked for (on the thread).
  void RunPendingSpares();
  // Ends every live spare whose key is not `key`; true when one with `key`
  // lives.
  bool KeepOnlySpare(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads every pending report of `w`; closes its control socket at EOF.
  void DrainReports(WorkerKey key, Worker& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Apply(WorkerKey key, Worker& w, session::v1::WorkerReport report)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckExit(WorkerKey key, Worker& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AnyLive() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WorkerCommand command_;
  const absl::Duration forget_after_;
  const int wake_fd_;  // eventfd: a launch job or shutdown is waiting

  mutable absl::Mutex mu_;
  std::map<WorkerKey, Worker> workers_ ABSL_GUARDED_BY(mu_);
  std::deque<LaunchJob*> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::string>> pending_spares_ ABSL_GUARDED_BY(mu_);
  WorkerKey next_key_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Spares are made while they get used: once kUnusedSparesBeforePause in
  // a row were ended unused (a request of another key came each time), a
  // session's end makes none, until a request like the last one whose
  // spare was not made comes (the developer repeats a command there).
  static constexpr int kUnusedSparesBeforePause = 2;
  int unused_spares_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<std::string> skipped_key_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> stop_deadline_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;
};

}  // namespace lazaret::sessiond

#endif  // LAZARET_SERVICES_SESSIOND_WORKER_TABLE_H_
