// The network sidecar's router process (its PID 1, lazaret-netrouter),
// pinned by a pidfd: the supervision loop sees at once when it is gone, and
// the teardown stops it without waiting for podman to notice. Runs in the
// session worker (lazaret-sessiond --session-worker), as the user. The
// process is found through the router socket in the session directory
// (the worker's own) and checked by name
// before it is pinned, so a later signal can never reach another process.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_ROUTER_WATCH_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_ROUTER_WATCH_H_

#include <string>

namespace lazaret::cli::session {

class RouterProcess {
 public:
  // Nothing pinned: Exited and Kill do nothing.
  RouterProcess() = default;
  ~RouterProcess();
  RouterProcess(RouterProcess&& other) noexcept;
  RouterProcess& operator=(RouterProcess&& other) noexcept;
  RouterProcess(const RouterProcess&) = delete;
  RouterProcess& operator=(const RouterProcess&) = delete;

  // The process listening on `socket_path`, found through SO_PEERCRED (the
  // kernel reports the listener's pid translated into our pid namespace),
  // checked by name, then pinned by a pidfd. Nothing pinned when any step
  // fails; the teardown then relies on podman alone.
  static RouterProcess Find(const std::string& socket_path);

  bool pinned() const { return pidfd_ >= 0; }
  // True when the process has exited within `timeout_ms` (0: now).
  bool Exited(int timeout_ms) const;
  // SIGKILL through the pidfd, waits up to `timeout_ms` for the exit, and
  // lets go of the pidfd.
  void Kill(int timeout_ms);

 private:
  explicit RouterProcess(int pidfd) : pidfd_(pidfd) {}
  int pidfd_ = -1;
};

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_ROUTER_WATCH_H_
