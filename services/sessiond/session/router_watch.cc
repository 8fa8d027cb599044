#include "services/sessiond/session/router_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace lazaret::cli::session {

RouterProcess::~RouterProcess() {
  if (pidfd_ >= 0) close(pidfd_);
}

RouterProcess::RouterProcess(RouterProcess&& other) noexcept
    : pidfd_(std::exchange(other.pidfd_, -1)) {}

RouterProcess& RouterProcess::operator=(RouterProcess&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) close(pidfd_);
    pidfd_ = std::exchange(other.pidfd_, -1);
  }
  return *this;
}

RouterProcess RouterProcess::Find(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return RouterProcess();
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return RouterProcess();
  ucred cred{};
  socklen_t len = sizeof(cred);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0;
  close(fd);
  if (!ok) return RouterProcess();
  // (glibc 2.36's <sys/pidfd.h> is not usable from C++: no extern "C".)
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, cred.pid, 0));
  if (pidfd < 0) return RouterProcess();
  char comm[64] = {};
  const std::string comm_path = absl::StrCat("/proc/", cred.pid, "/comm");
  const int cfd = open(comm_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (cfd >= 0) {
    (void)!read(cfd, comm, sizeof(comm) - 1);
    close(cfd);
  }
  // comm is truncated to 15 characters: "lazaret-netrout".
  if (std::strncmp(comm, "lazaret-netrout", 15) != 0) {
    close(pidfd);
    return RouterProcess();
  }
  return RouterProcess(pidfd);
}

bool RouterProcess::Exited(int timeout_ms) const {
  if (pidfd_ < 0) return false;
  pollfd p{pidfd_, POLLIN, 0};
  return poll(&p, 1, timeout_ms) > 0;
}

void RouterProcess::Kill(int timeout_ms) {
  if (pidfd_ < 0) return;
  if (syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0) == 0) {
    (void)Exited(timeout_ms);
  }
  close(pidfd_);
  pidfd_ = -1;
}

}  // namespace lazaret::cli::session
