#include "services/netpolicyd/inbound_ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/common/session_client.h"
#include "services/common/status_util.h"

namespace lazaret::netpolicyd {
namespace {

namespace cpb = ::lazaret::common::v1;

// A listening TCP socket on `address`:`port`, or why not.
absl::StatusOr<int> BindHost(const std::string& address, uint32_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = AF_INET;
  if (address.find(':') != std::string::npos) {
    family = AF_INET6;
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, address.c_str(), &a->sin6_addr) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", address.substr(0, 64), "\" is not an IP address"));
    }
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, address.c_str(), &a->sin_addr) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", address.substr(0, 64), "\" is not an IP address"));
    }
    len = sizeof(*a);
  }
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket", errno);
  if (family == AF_INET6) {
    // [::]:H means IPv6 only; 0.0.0.0 must be written out for IPv4.
    int on = 1;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  }
  // No SO_REUSEADDR: a port someone else holds is busy, and says so.
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd, 64) != 0) {
    const int e = errno;
    close(fd);
    const std::string where = family == AF_INET6 ? absl::StrCat("[", address, "]:", port)
                                                 : absl::StrCat(address, ":", port);
    if (e == EADDRINUSE) {
      return absl::AlreadyExistsError(
          absl::StrCat("host port ", where, " is in use; choose another host port, e.g. -p ",
                       port + 1, ":<sandbox port>"));
    }
    return ErrnoStatus(absl::StrCat("listening on ", where), e);
  }
  return fd;
}

absl::StatusOr<int> DialUnixSocket(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is too long for a Unix socket"));
  }
  std::memcpy(a.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus("socket", errno);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoStatus(absl::StrCat("connecting to ", path), e);
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<InboundPorts>> InboundPorts::Create(std::string runtime_dir) {
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<StreamRelay> relay, StreamRelay::Start({}));
  return std::unique_ptr<InboundPorts>(new InboundPorts(std::move(runtime_dir), std::move(relay)));
}

InboundPorts::InboundPorts(std::string runtime_dir, std::unique_ptr<StreamRelay> relay)
    : runtime_dir_(std::move(runtime_dir)), relay_(std::move(relay)) {}

absl::StatusOr<std::vector<cpb::PortForward>> InboundPorts::Add(const std::string& session_id,
                                                                cpb::PortForward port) {
  LAZ_RETURN_IF_ERROR(CheckSessionId(session_id));
  if (port.host_port() < kMinHostPort || port.host_port() > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("host port ", port.host_port(), " is not allowed: forwards bind host ports ",
                     kMinHostPort, " to 65535"));
  }
  if (port.sandbox_port() == 0) port.set_sandbox_port(port.host_port());
  if (port.sandbox_port() > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("sandbox port ", port.sandbox_port(), " is not a port number"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Forward>& forwards = sessions_[session_id];
  if (forwards.size() >= kMaxForwardsPerSession) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a session forwards at most ", kMaxForwardsPerSession, " ports"));
  }
  for (const Forward& f : forwards) {
    if (f.port.host_port() == port.host_port()) {
      return absl::AlreadyExistsError(
          absl::StrCat("host port ", port.host_port(), " is forwarded already in this session"));
    }
  }
  // The loopback of both families unless the user named an address.
  std::vector<std::string> addresses = {port.host_address()};
  if (port.host_address().empty()) addresses = {"127.0.0.1", "::1"};
  std::vector<int> fds;
  for (const std::string& a : addresses) {
    absl::StatusOr<int> fd = BindHost(a, port.host_port());
    if (!fd.ok()) {
      // A host without IPv6 still forwards on 127.0.0.1.
      if (a == "::1" && absl::StrContains(fd.status().message(), std::strerror(EADDRNOTAVAIL))) {
        continue;
      }
      for (int o : fds) close(o);
      return fd.status();
    }
    fds.push_back(*fd);
  }
  const uint64_t group = ++next_group_;
  const std::string sock = absl::StrCat(runtime_dir_, "/sessions/", session_id, "/router/in/",
                                        port.sandbox_port(), ".sock");
  for (int fd : fds) {
    relay_->AddListener(group, fd, [sock] { return DialUnixSocket(sock); });
  }
  forwards.push_back(Forward{group, port});
  return ListLocked(session_id);
}

absl::StatusOr<std::vector<cpb::PortForward>> InboundPorts::Remove(const std::string& session_id,
                                                                   uint32_t host_port,
                                                                   uint32_t* sandbox_port,
                                                                   bool* sandbox_port_unused) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) {
    return absl::NotFoundError(absl::StrCat("host port ", host_port, " is not forwarded"));
  }
  std::vector<Forward>& forwards = it->second;
  auto f = std::find_if(forwards.begin(), forwards.end(),
                        [&](const Forward& x) { return x.port.host_port() == host_port; });
  if (f == forwards.end()) {
    return absl::NotFoundError(absl::StrCat("host port ", host_port, " is not forwarded"));
  }
  relay_->RemoveGroup(f->group);
  *sandbox_port = f->port.sandbox_port();
  forwards.erase(f);
  *sandbox_port_unused = std::none_of(forwards.begin(), forwards.end(), [&](const Forward& x) {
    return x.port.sandbox_port() == *sandbox_port;
  });
  return ListLocked(session_id);
}

std::vector<cpb::PortForward> InboundPorts::List(const std::string& session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return ListLocked(session_id);
}

std::vector<cpb::PortForward> InboundPorts::ListLocked(const std::string& session_id) const {
  std::vector<cpb::PortForward> out;
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return out;
  for (const Forward& f : it->second) out.push_back(f.port);
  return out;
}

void InboundPorts::CloseSession(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) return;
  for (const Forward& f : it->second) relay_->RemoveGroup(f.group);
  sessions_.erase(it);
}

}  // namespace lazaret::netpolicyd
