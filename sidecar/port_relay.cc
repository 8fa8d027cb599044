#include "sidecar/port_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::netrouter {
namespace {

// One connect, bounded to `timeout`; the socket or the errno.
int ConnectOnce(const sockaddr* addr, socklen_t len, int family, int* err) {
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, addr, len) != 0) {
    *err = errno;
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<int> ConnectNamespaceLoopback(uint16_t port) {
  int err4 = 0;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_port = htons(port);
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = ConnectOnce(reinterpret_cast<sockaddr*>(&v4), sizeof(v4), AF_INET, &err4);
  if (fd >= 0) return fd;
  int err6 = 0;
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_port = htons(port);
  v6.sin6_addr = in6addr_loopback;
  fd = ConnectOnce(reinterpret_cast<sockaddr*>(&v6), sizeof(v6), AF_INET6, &err6);
  if (fd >= 0) return fd;
  return absl::UnavailableError(absl::StrCat("nothing listens on port ", port,
                                             " of the sandbox's loopback (127.0.0.1: ",
                                             std::strerror(err4), "; ::1: ", std::strerror(err6),
                                             ")"));
}

absl::StatusOr<std::unique_ptr<PortRelay>> PortRelay::Create(const PortRelayOptions& options) {
  if (!vocab::IsCleanAbsolutePath(options.socket_dir)) {
    return absl::InvalidArgumentError("the router's socket directory is not a clean absolute path");
  }
  const std::string in = options.socket_dir + "/in";
  if (mkdir(in.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(absl::StrCat("creating ", in), errno);
  }
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<StreamRelay> relay,
                       StreamRelay::Start({.max_connections_per_group =
                                               options.max_connections_per_port,
                                           .buffer_bytes = options.buffer_bytes}));
  PortRelayOptions o = options;
  if (o.peer_uid == static_cast<uid_t>(-1)) o.peer_uid = getuid();
  return std::unique_ptr<PortRelay>(new PortRelay(o, in, std::move(relay)));
}

PortRelay::PortRelay(const PortRelayOptions& options, std::string in_dir,
                     std::unique_ptr<StreamRelay> relay)
    : options_(options), in_dir_(std::move(in_dir)), relay_(std::move(relay)) {}

std::string PortRelay::SocketPath(uint32_t sandbox_port) const {
  return absl::StrCat(in_dir_, "/", sandbox_port, ".sock");
}

absl::Status PortRelay::Open(uint32_t sandbox_port) {
  if (sandbox_port == 0 || sandbox_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("sandbox port ", sandbox_port,
                                                   " is not a port number (1 to 65535)"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (open_.count(sandbox_port) != 0) return absl::OkStatus();
  if (open_.size() >= options_.max_ports) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a session forwards at most ", options_.max_ports, " ports"));
  }
  const std::string path = SocketPath(sandbox_port);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is too long for a Unix socket"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  // A socket file left by an earlier router of this directory.
  unlink(path.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket", errno);
  const mode_t old = umask(0177);
  const int bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  umask(old);
  if (bound != 0 || listen(fd, 64) != 0) {
    const int e = bound != 0 ? bind_errno : errno;
    close(fd);
    return ErrnoStatus(absl::StrCat("listening on ", path), e);
  }
  const uint16_t port = static_cast<uint16_t>(sandbox_port);
  const uid_t want = options_.peer_uid;
  relay_->AddListener(
      port, fd, [port] { return ConnectNamespaceLoopback(port); },
      [want](int c) {
        ucred cred{};
        socklen_t len = sizeof(cred);
        return getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == want;
      });
  open_.insert(sandbox_port);
  return absl::OkStatus();
}

absl::Status PortRelay::Close(uint32_t sandbox_port) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_.erase(sandbox_port) == 0) return absl::OkStatus();
  relay_->RemoveGroup(sandbox_port);
  unlink(SocketPath(sandbox_port).c_str());
  return absl::OkStatus();
}

std::vector<uint32_t> PortRelay::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<uint32_t>(open_.begin(), open_.end());
}

}  // namespace lazaret::netrouter
