#include "services/sessiond/session/signals.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <initializer_list>

namespace lazaret::cli::session {

sigset_t SessionSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1}) sigaddset(&set, s);
  return set;
}

void BlockSessionSignals() {
  const sigset_t set = SessionSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int PendingTermination() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
  timespec zero{0, 0};
  const int sig = sigtimedwait(&set, nullptr, &zero);
  return sig > 0 ? sig : 0;
}

void WakeSupervision() { kill(getpid(), SIGUSR1); }

}  // namespace lazaret::cli::session
