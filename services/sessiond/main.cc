// lazaret-sessiond's entry: the service (sessiond.h), a session worker
// (--session-worker, session/worker.h) or a reap (--reap-session=ID).
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>

#include "services/common/log.h"
#include "services/common/service_main.h"
#include "services/sessiond/session/worker.h"
#include "services/sessiond/sessiond.h"

namespace {

// The death signal sessiond set for this child does not survive an execve
// that raised the child's capabilities (rootful: root gains its bounding
// set at exec), so the child sets it again. Had sessiond ended in between,
// the signal would never come: for a worker, sessiond's end of the control
// socket is then closed, and the worker exits before it starts anything.
bool RearmDeathSignal(int signal, int control_fd) {
  prctl(PR_SET_PDEATHSIG, signal);
  if (control_fd < 0) return true;
  pollfd p{control_fd, POLLIN, 0};
  return !(poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0);
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<lazaret::sessiond::Invocation> inv = lazaret::sessiond::ParseFlags(argc, argv);
  if (!inv.ok()) {
    lazaret::log::SetProcessName("lazaret-sessiond");
    LAZ_LOG_ERROR << inv.status().message();
    return 2;
  }
  using Mode = lazaret::sessiond::Invocation::Mode;
  switch (inv->mode) {
    case Mode::kSessionWorker:
      if (!RearmDeathSignal(SIGTERM, 3)) return 1;
      return lazaret::cli::session::RunSessionWorker(
          {.runtime_dir = inv->options.service.runtime_dir,
           .libexec_dir = inv->options.libexec_dir,
           .control_fd = 3});
    case Mode::kReap:
      RearmDeathSignal(SIGKILL, -1);
      lazaret::log::SetProcessName("lazaret-sessiond-reap");
      return lazaret::sessiond::RunReap(inv->options.service.runtime_dir, inv->reap_session);
    case Mode::kServe:
      break;
  }
  lazaret::BlockTerminationSignals();
  lazaret::log::SetProcessName("lazaret-sessiond");
  if (absl::Status s = lazaret::sessiond::Run(inv->options); !s.ok()) {
    LAZ_LOG_ERROR << s.message();
    return 1;
  }
  return 0;
}
