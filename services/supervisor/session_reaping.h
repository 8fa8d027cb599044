// The supervisor's side of the reaper (reaper.h): hands the reaper every
// session whose `lazaret run` is gone - at startup those left by an earlier
// run, later each whose owner's pidfd fires - reads back what became of it,
// and at shutdown asks live sessions to end and lets the reaper finish.
// Runs in lazaret-supervisord's supervision loop thread only. A result line
// is trusted only as far as ParseReapResult accepts it; anything else is
// taken for a lost reaper.
#ifndef LAZARET_SERVICES_SUPERVISOR_SESSION_REAPING_H_
#define LAZARET_SERVICES_SUPERVISOR_SESSION_REAPING_H_

#include <sys/types.h>

#include <string>
#include <utility>

#include "services/supervisor/reaper.h"
#include "services/supervisor/registry.h"

namespace lazaret::supervisor {

class SessionReaping {
 public:
  SessionReaping(std::string runtime_dir, SessionRegistry* registry, ReaperProcess reaper)
      : runtime_dir_(std::move(runtime_dir)), registry_(registry), reaper_(reaper) {}

  SessionReaping(const SessionReaping&) = delete;
  SessionReaping& operator=(const SessionReaping&) = delete;

  // Readable when the reaper has written a result (or is gone).
  int result_fd() const { return reaper_.result_fd; }
  pid_t reaper_pid() const { return reaper_.pid; }
  // True once the reaper process has exited (or was stopped at shutdown).
  bool reaper_lost() const { return reaper_lost_; }

  // Every session directory left in the runtime directory by a `lazaret
  // run` that died while no supervisor ran: the reaper removes each whose
  // owner is gone (`lazaret clean --session` refuses a live one).
  void ReapLeftoverSessions();
  // The owner of session `id` is gone, however it ended: reap now.
  void OwnerGone(const std::string& id);
  // One result line from the reaper; false when the reaper is gone.
  bool ReadResult();
  // The reaper process exited (waitpid status `wstatus`).
  void ReaperExited(int wstatus);

  // Before the services stop: every live session's owner is asked to end
  // its session (its own teardown and write-back); an owner that died
  // without unregistering is reaped; then the reaper finishes what it has.
  // The reaper has been waited for when this returns.
  void StopSessions();

 private:
  void SendToReaper(const std::string& id);

  const std::string runtime_dir_;
  SessionRegistry* const registry_;
  ReaperProcess reaper_;
  bool reaper_lost_ = false;
};

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_SESSION_REAPING_H_
