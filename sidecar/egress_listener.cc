#include "sidecar/egress_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::netrouter {
namespace {

using Clock = std::chrono::steady_clock;

// epoll tags: a pending connect's tag counts up from 1; the reserved
// values are far above any it reaches.
constexpr uint64_t kHttpsTag = ~uint64_t{0};
constexpr uint64_t kHttpTag = ~uint64_t{0} - 1;
constexpr uint64_t kChannelTag = ~uint64_t{0} - 2;
constexpr uint64_t kPeerTag = ~uint64_t{0} - 3;
constexpr uint64_t kEgressWakeTag = ~uint64_t{0} - 4;

// Closes with a reset: the sandbox's client sees ECONNRESET at once,
// never a connection that hangs or a clean end it could take for a reply.
void ResetFd(fs::UniqueFd fd) {
  linger l{1, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

bool WorthLogging(uint64_t count) { return (count & (count - 1)) == 0; }

absl::StatusOr<fs::UniqueFd> TcpListener(const std::string& address, uint16_t port, int backlog,
                                         uint16_t* bound_port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", address.substr(0, 64), "\" is not an IPv4 address"));
  }
  fs::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("socket", errno);
  // No SO_REUSEADDR or SO_REUSEPORT: nobody may bind the port beside it.
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd.get(), backlog) != 0) {
    return ErrnoStatus(absl::StrCat("the egress listener on ", address, ":", port, "/tcp"), errno);
  }
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return ErrnoStatus("getsockname", errno);
  }
  *bound_port = ntohs(bound.sin_port);
  return fd;
}

bool IsOwnAddress(int family, const uint8_t* address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return true;  // not known: refuse
  bool own = false;
  for (ifaddrs* i = list; i != nullptr && !own; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != family) continue;
    if (family == AF_INET) {
      own = std::memcmp(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, address, 4) == 0;
    } else {
      own = std::memcmp(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, address, 16) == 0;
    }
  }
  freeifaddrs(list);
  return own;
}

}  // namespace

bool RefusedDestination(int family, const uint8_t* a) {
  if (family == AF_INET) {
    if (a[0] == 127 || a[0] == 0) return true;  // loopback, "this network"
    if ((a[0] & 0xf0) == 0xe0) return true;     // multicast 224/4
    if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255) return true;
    return IsOwnAddress(AF_INET, a);
  }
  if (family != AF_INET6) return true;
  static constexpr uint8_t kZero[16] = {};
  if (std::memcmp(a, kZero, 15) == 0 && (a[15] == 0 || a[15] == 1)) return true;      // ::, ::1
  if (a[0] == 0xff) return true;                                                      // multicast
  if (std::memcmp(a, kZero, 10) == 0 && a[10] == 0xff && a[11] == 0xff) return true;  // mapped
  return IsOwnAddress(AF_INET6, a);
}

absl::StatusOr<std::unique_ptr<EgressListener>> EgressListener::Start(
    const EgressListenerOptions& options) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (!vocab::IsCleanAbsolutePath(options.socket_path) ||
      options.socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the egress socket \"", options.socket_path.substr(0, 200),
                     "\" is not a clean absolute path that fits a Unix socket address"));
  }
  if (options.max_queued == 0 || options.max_connects == 0 || options.backlog <= 0) {
    return absl::InvalidArgumentError("the egress listener needs room for a connection");
  }
  std::memcpy(addr.sun_path, options.socket_path.data(), options.socket_path.size());
  uint16_t https_port = 0, http_port = 0;
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd https, TcpListener(options.address, options.https_port,
                                                       options.backlog, &https_port));
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd http, TcpListener(options.address, options.http_port,
                                                      options.backlog, &http_port));

  // A socket file left by an earlier router of this directory.
  unlink(options.socket_path.c_str());
  fs::UniqueFd channel(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!channel.valid()) return ErrnoStatus("socket", errno);
  const mode_t old = umask(0177);
  const int bound = bind(channel.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  umask(old);
  if (bound != 0) {
    return ErrnoStatus(absl::StrCat("binding the egress socket ", options.socket_path), bind_errno);
  }
  if (listen(channel.get(), 4) != 0) {
    return ErrnoStatus(absl::StrCat("listening on ", options.socket_path), errno);
  }
  fs::UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return ErrnoStatus("epoll_create1", errno);
  fs::UniqueFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return ErrnoStatus("eventfd", errno);
  for (auto [fd, tag] :
       {std::pair{https.get(), kHttpsTag}, std::pair{http.get(), kHttpTag},
        std::pair{channel.get(), kChannelTag}, std::pair{wake.get(), kEgressWakeTag}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return ErrnoStatus("epoll_ctl", errno);
  }
  EgressListenerOptions o = options;
  if (o.peer_uid == static_cast<uid_t>(-1)) o.peer_uid = getuid();
  std::unique_ptr<EgressListener> listener(
      new EgressListener(o, std::move(https), std::move(http), std::move(channel), std::move(ep),
                         std::move(wake), https_port, http_port));
  listener->thread_ = std::thread([raw = listener.get()] { raw->Loop(); });
  return listener;
}

EgressListener::EgressListener(const EgressListenerOptions& options, fs::UniqueFd https,
                               fs::UniqueFd http, fs::UniqueFd channel, fs::UniqueFd epoll,
                               fs::UniqueFd wake, uint16_t https_port, uint16_t http_port)
    : options_(options),
      https_(std::move(https)),
      http_(std::move(http)),
      channel_(std::move(channel)),
      epoll_(std::move(epoll)),
      wake_(std::move(wake)),
      https_port_(https_port),
      http_port_(http_port) {}

EgressListener::~EgressListener() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  DropPeer("the router is stopping");
  unlink(options_.socket_path.c_str());
}

EgressListener::Counters EgressListener::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

void EgressListener::Publish() {
  counters_.attached = peer_.valid();
  counters_.connecting = connects_.size();
  std::lock_guard<std::mutex> lock(mu_);
  published_ = counters_;
}

void EgressListener::Loop() {
  epoll_event events[64];
  Publish();
  for (;;) {
    int timeout_ms = -1;
    if (!connects_.empty()) {
      Clock::time_point first = Clock::time_point::max();
      for (const auto& [tag, p] : connects_) first = std::min(first, p.deadline);
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(first - Clock::now()).count();
      timeout_ms = std::max<int>(0, static_cast<int>(left) + 1);
    }
    const int n = epoll_wait(epoll_.get(), events, 64, timeout_ms);
    if (n < 0 && errno != EINTR) {
      LAZ_LOG_ERROR << "egress listener: epoll_wait: " << std::strerror(errno);
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kHttpsTag) {
        OnTcpAccept(https_.get(), https_port_);
      } else if (tag == kHttpTag) {
        OnTcpAccept(http_.get(), http_port_);
      } else if (tag == kChannelTag) {
        OnChannelAccept();
      } else if (tag == kPeerTag) {
        OnPeer(events[i].events);
      } else if (tag == kEgressWakeTag) {
        uint64_t count;
        (void)!read(wake_.get(), &count, sizeof(count));
      } else {
        OnConnectDone(tag);
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    ExpireConnects();
    Publish();
  }
}

void EgressListener::OnTcpAccept(int listen_fd, uint16_t port) {
  for (;;) {
    // Blocking mode: the proxy sets what it needs; nothing here reads it.
    fs::UniqueFd c(accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!c.valid()) break;  // EAGAIN: drained; anything else: the next wake retries
    if (!peer_.valid()) {
      ResetFd(std::move(c));
      if (WorthLogging(++counters_.reset_no_proxy)) {
        LAZ_LOG_WARNING << "egress listener: no egress proxy attached; " << counters_.reset_no_proxy
                        << " sandbox connection(s) reset";
      }
      continue;
    }
    if (queue_.size() >= options_.max_queued) {
      ResetFd(std::move(c));
      if (WorthLogging(++counters_.reset_queue_full)) {
        LAZ_LOG_WARNING << "egress listener: the egress proxy is not reading; "
                        << counters_.reset_queue_full << " sandbox connection(s) reset";
      }
      continue;
    }
    ++counters_.handed;
    queue_.push_back(Outgoing{egress::AcceptedMessage(++next_connection_id_, port), std::move(c)});
  }
  Flush();
}

void EgressListener::OnChannelAccept() {
  for (;;) {
    fs::UniqueFd c(accept4(channel_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!c.valid()) return;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        cred.uid != options_.peer_uid) {
      ++counters_.peers_refused;
      LAZ_LOG_WARNING << "egress listener: refused a channel peer of uid " << cred.uid << " pid "
                      << cred.pid << " (only uid " << options_.peer_uid << ")";
      continue;
    }
    if (peer_.valid()) {
      // The old proxy may be gone with its hang-up not yet seen by the loop.
      pollfd p{peer_.get(), POLLIN | POLLRDHUP, 0};
      const bool dead =
          poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) != 0;
      if (!dead) {
        ++counters_.peers_refused;
        LAZ_LOG_WARNING << "egress listener: refused a second egress proxy (pid " << cred.pid
                        << ") while one is attached";
        continue;
      }
      DropPeer("it closed the channel");
    }
    peer_ = std::move(c);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kPeerTag;
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, peer_.get(), &ev);
    LAZ_LOG_INFO << "egress listener: egress proxy attached (pid " << cred.pid << ")";
    ArmPeer();
  }
}

void EgressListener::OnPeer(uint32_t events) {
  if (!peer_.valid()) return;
  if ((events & EPOLLOUT) != 0) Flush();
  if (!peer_.valid()) return;
  if ((events & EPOLLIN) != 0) ReadRequests();
  if (!peer_.valid()) return;
  // Hung up with nothing left to read (or reads paused): the proxy is gone.
  if ((events & (EPOLLHUP | EPOLLERR)) != 0) {
    DropPeer("it closed the channel");
    return;
  }
  ArmPeer();
}

void EgressListener::ReadRequests() {
  while (peer_.valid() && connects_.size() < options_.max_connects &&
         queue_.size() < options_.max_queued) {
    absl::StatusOr<std::optional<egress::Received>> r =
        egress::ReceiveWithFd(peer_.get(), MSG_DONTWAIT);
    if (!r.ok()) {
      DropPeer(absl::IsOutOfRange(r.status()) ? std::string("it closed the channel")
                                              : std::string(r.status().message()));
      return;
    }
    if (!r->has_value()) return;
    if ((*r)->message.type != egress::MessageType::kConnect) {
      DropPeer("it sent a message only the router sends");
      return;
    }
    HandleConnect((*r)->message);
  }
}

void EgressListener::HandleConnect(const egress::Message& request) {
  if (request.port == 0) {
    ++counters_.connects_refused;
    Reply(request.id, EINVAL);
    return;
  }
  if (RefusedDestination(request.family, request.address.data())) {
    ++counters_.connects_refused;
    Reply(request.id, EPERM);
    return;
  }
  sockaddr_storage ss{};
  socklen_t len;
  if (request.family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(request.port);
    std::memcpy(&a->sin_addr, request.address.data(), 4);
    len = sizeof(sockaddr_in);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(request.port);
    std::memcpy(&a->sin6_addr, request.address.data(), 16);
    len = sizeof(sockaddr_in6);
  }
  fs::UniqueFd fd(socket(request.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    ++counters_.connects_failed;
    Reply(request.id, errno);
    return;
  }
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) == 0) {
    fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    ++counters_.connects_ok;
    Reply(request.id, 0, std::move(fd));
    return;
  }
  if (errno != EINPROGRESS) {
    ++counters_.connects_failed;
    Reply(request.id, errno);
    return;
  }
  const uint64_t tag = ++next_tag_;
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.u64 = tag;
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev);
  connects_[tag] = Pending{request.id, std::move(fd), Clock::now() + options_.connect_timeout};
}

void EgressListener::OnConnectDone(uint64_t tag) {
  auto it = connects_.find(tag);
  if (it == connects_.end()) return;
  Pending p = std::move(it->second);
  connects_.erase(it);
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p.fd.get(), nullptr);
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(p.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    ++counters_.connects_failed;
    Reply(p.request_id, err);
  } else {
    fcntl(p.fd.get(), F_SETFL, fcntl(p.fd.get(), F_GETFL) & ~O_NONBLOCK);
    ++counters_.connects_ok;
    Reply(p.request_id, 0, std::move(p.fd));
  }
  if (peer_.valid()) ArmPeer();
}

void EgressListener::ExpireConnects() {
  const Clock::time_point now = Clock::now();
  std::vector<uint64_t> late;
  for (const auto& [tag, p] : connects_) {
    if (now >= p.deadline) late.push_back(tag);
  }
  for (uint64_t tag : late) {
    auto it = connects_.find(tag);
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
    const uint64_t id = it->second.request_id;
    connects_.erase(it);
    ++counters_.connects_failed;
    Reply(id, ETIMEDOUT);
  }
  if (!late.empty() && peer_.valid()) ArmPeer();
}

void EgressListener::Reply(uint64_t request_id, int error, fs::UniqueFd fd) {
  if (!peer_.valid()) return;  // the proxy that asked is gone; the socket closes
  queue_.push_back(Outgoing{egress::ConnectedMessage(request_id, error), std::move(fd)});
  Flush();
}

void EgressListener::Flush() {
  while (peer_.valid() && !queue_.empty()) {
    Outgoing& out = queue_.front();
    absl::Status st = egress::SendWithFd(peer_.get(), out.message,
                                         out.fd.valid() ? out.fd.get() : -1, MSG_DONTWAIT);
    if (egress::SendWouldBlock(st)) break;
    if (!st.ok()) {
      DropPeer(std::string(st.message()));
      return;
    }
    queue_.pop_front();  // the router's copy of the descriptor closes
  }
  if (peer_.valid()) ArmPeer();
}

void EgressListener::ArmPeer() {
  uint32_t interest = 0;
  if (connects_.size() < options_.max_connects && queue_.size() < options_.max_queued) {
    interest |= EPOLLIN;
  }
  if (!queue_.empty()) interest |= EPOLLOUT;
  epoll_event ev{};
  ev.events = interest;  // EPOLLHUP and EPOLLERR are always reported
  ev.data.u64 = kPeerTag;
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, peer_.get(), &ev);
}

void EgressListener::DropPeer(const std::string& why) {
  const bool had = peer_.valid();
  if (had) {
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, peer_.get(), nullptr);
    peer_.reset();
  }
  // What the proxy never received: sandbox connections are reset (fail
  // closed), upstream sockets closed; connects under way are abandoned.
  for (Outgoing& out : queue_) {
    if (out.message.type == egress::MessageType::kAccepted) ResetFd(std::move(out.fd));
  }
  queue_.clear();
  for (auto& [tag, p] : connects_) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p.fd.get(), nullptr);
  connects_.clear();
  if (had) LAZ_LOG_WARNING << "egress listener: egress proxy detached: " << why;
}

}  // namespace lazaret::netrouter
