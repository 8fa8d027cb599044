#include "sidecar/dns_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/status_util.h"
#include "sidecar/dns_message.h"

namespace lazaret::netrouter {
namespace {

using Clock = std::chrono::steady_clock;

// epoll tags: kind in the top byte, fd or connection id below.
constexpr uint64_t kUdpTag = 1ull << 56;
constexpr uint64_t kListenTag = 2ull << 56;
constexpr uint64_t kConnTag = 3ull << 56;
constexpr uint64_t kWakeTag = 4ull << 56;
constexpr uint64_t kTagMask = 0xffull << 56;

// A TCP asker that does not read its answers is dropped past this.
constexpr size_t kMaxTcpOutput = 256 * 1024;

absl::StatusOr<int> Listener(const std::string& address, uint16_t port, int type, int* error) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  const bool v6 = address.find(':') != std::string::npos;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    inet_pton(AF_INET6, address.c_str(), &a->sin6_addr);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    inet_pton(AF_INET, address.c_str(), &a->sin_addr);
    len = sizeof(*a);
  }
  const int fd = socket(v6 ? AF_INET6 : AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = errno;
    return ErrnoStatus("socket", errno);
  }
  int one = 1;
  if (v6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (type == SOCK_STREAM) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      (type == SOCK_STREAM && listen(fd, 64) != 0)) {
    const int e = errno;
    *error = e;
    close(fd);
    return ErrnoStatus(
        absl::StrCat("listening on ", v6 ? "[" : "", address, v6 ? "]" : "", ":", port,
                     type == SOCK_STREAM ? "/tcp" : "/udp",
                     e == EACCES ? " (needs ip_unprivileged_port_start <= the port)" : ""),
        e);
  }
  return fd;
}

}  // namespace

struct DnsRelay::Conn {
  int fd;
  std::string in;
  std::string out;
  Clock::time_point last_activity;
  size_t pending = 0;
};

struct DnsRelay::Pending {
  uint64_t epoch = 0;
  v1::DnsTransport transport = v1::DNS_TRANSPORT_UDP;
  int udp_fd = -1;
  sockaddr_storage peer{};
  socklen_t peer_len = 0;
  uint64_t conn_id = 0;
  std::string servfail;  // built up front: the query itself is not kept
  Clock::time_point deadline;
  bool held = false;  // an approver is being asked (DnsAnswer.hold_ms)
};

absl::StatusOr<std::unique_ptr<DnsRelay>> DnsRelay::Start(const DnsRelayOptions& options) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return ErrnoStatus("epoll_create1", errno);
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int e = errno;
    close(ep);
    return ErrnoStatus("eventfd", e);
  }
  std::unique_ptr<DnsRelay> relay(new DnsRelay(options, ep, wake));
  for (const std::string& address : options.addresses) {
    for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
      int error = 0;
      absl::StatusOr<int> fd = Listener(address, options.port, type, &error);
      if (!fd.ok()) {
        // No ::1 means IPv6 is off in this namespace: nothing to serve there.
        if (address.find(':') != std::string::npos &&
            (error == EADDRNOTAVAIL || error == EAFNOSUPPORT)) {
          LAZ_LOG_WARNING << "no DNS listener on [" << address << "]: " << fd.status().message();
          break;
        }
        return fd.status();
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = (type == SOCK_DGRAM ? kUdpTag : kListenTag) | static_cast<uint64_t>(*fd);
      epoll_ctl(ep, EPOLL_CTL_ADD, *fd, &ev);
      (type == SOCK_DGRAM ? relay->udp_fds_ : relay->listen_fds_).push_back(*fd);
    }
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  epoll_ctl(ep, EPOLL_CTL_ADD, wake, &ev);
  relay->thread_ = std::thread([raw = relay.get()] { raw->Loop(); });
  return relay;
}

DnsRelay::DnsRelay(const DnsRelayOptions& options, int epoll_fd, int wake_fd)
    : options_(options), epoll_fd_(epoll_fd), wake_fd_(wake_fd) {}

DnsRelay::~DnsRelay() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  for (auto& [id, c] : conns_) close(c->fd);
  for (int fd : udp_fds_) close(fd);
  for (int fd : listen_fds_) close(fd);
  close(wake_fd_);
  close(epoll_fd_);
}

uint64_t DnsRelay::Attach(DnsRelaySink* sink) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sink_ != nullptr) {
    sink_->Replace();
    events_.push_back({Event::Kind::kStreamEnded, epoch_, 0, {}});
  }
  sink_ = sink;
  ++epoch_;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  return epoch_;
}

void DnsRelay::Detach(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch == epoch_) sink_ = nullptr;
  events_.push_back({Event::Kind::kStreamEnded, epoch, 0, {}});
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void DnsRelay::Answer(uint64_t epoch, uint64_t id, std::string message, uint32_t hold_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back({Event::Kind::kAnswer, epoch, id, std::move(message), hold_ms});
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void DnsRelay::Loop() {
  epoll_event events[32];
  for (;;) {
    int timeout_ms = 1000;
    const Clock::time_point now = Clock::now();
    for (const auto& [id, p] : in_flight_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p->deadline - now);
      timeout_ms = std::max(0, std::min<int>(timeout_ms, static_cast<int>(left.count()) + 1));
    }
    const int n = epoll_wait(epoll_fd_, events, 32, timeout_ms);
    if (n < 0 && errno != EINTR) {
      LAZ_LOG_ERROR << "DNS relay: epoll_wait: " << std::strerror(errno);
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      const uint64_t value = tag & ~kTagMask;
      switch (tag & kTagMask) {
        case kUdpTag:
          OnUdp(static_cast<int>(value));
          break;
        case kListenTag:
          OnAccept(static_cast<int>(value));
          break;
        case kConnTag:
          if ((events[i].events & (EPOLLERR | EPOLLHUP)) != 0 && conns_.count(value) != 0 &&
              (events[i].events & EPOLLIN) == 0) {
            CloseConn(value);
            break;
          }
          if ((events[i].events & EPOLLOUT) != 0) OnConnWritable(value);
          if ((events[i].events & EPOLLIN) != 0) OnConnReadable(value);
          break;
        case kWakeTag: {
          uint64_t count;
          (void)!read(wake_fd_, &count, sizeof(count));
          break;
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    DrainEvents();
    ExpireTimeouts();
  }
}

void DnsRelay::OnUdp(int fd) {
  std::string buf(options_.max_udp_query + 1, '\0');
  for (int i = 0; i < 64; ++i) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    const ssize_t n = recvfrom(fd, buf.data(), buf.size(), MSG_TRUNC,
                               reinterpret_cast<sockaddr*>(&peer), &peer_len);
    if (n < 0) return;                                              // EAGAIN: drained
    if (static_cast<size_t>(n) > options_.max_udp_query) continue;  // over the bound: dropped
    Relay(buf.substr(0, static_cast<size_t>(n)), fd, &peer, peer_len, 0);
  }
}

void DnsRelay::OnAccept(int fd) {
  for (;;) {
    const int c = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return;
    if (conns_.size() >= options_.max_tcp_connections) {
      close(c);  // at the bound: refused by closing at once
      continue;
    }
    const uint64_t id = ++next_conn_;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kConnTag | id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c, &ev);
    conns_[id] = std::make_unique<Conn>(Conn{c, {}, {}, Clock::now(), 0});
  }
}

void DnsRelay::OnConnReadable(uint64_t conn_id) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  char buf[16384];
  const ssize_t n = read(c.fd, buf, sizeof(buf));
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    CloseConn(conn_id);
    return;
  }
  if (n < 0) return;
  c.last_activity = Clock::now();
  c.in.append(buf, static_cast<size_t>(n));
  while (c.in.size() >= 2) {
    const size_t len = (static_cast<uint8_t>(c.in[0]) << 8) | static_cast<uint8_t>(c.in[1]);
    if (c.in.size() < 2 + len) break;
    std::string query = c.in.substr(2, len);
    c.in.erase(0, 2 + len);
    Relay(std::move(query), -1, nullptr, 0, conn_id);
    if (conns_.count(conn_id) == 0) return;  // closed while answering
  }
}

void DnsRelay::OnConnWritable(uint64_t conn_id) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  while (!c.out.empty()) {
    const ssize_t n = write(c.fd, c.out.data(), c.out.size());
    if (n < 0) {
      if (errno == EAGAIN) break;
      CloseConn(conn_id);
      return;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
  epoll_event ev{};
  ev.events = c.out.empty() ? EPOLLIN : (EPOLLIN | EPOLLOUT);
  ev.data.u64 = kConnTag | conn_id;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void DnsRelay::CloseConn(uint64_t conn_id) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->fd, nullptr);
  close(it->second->fd);
  conns_.erase(it);
}

void DnsRelay::Relay(std::string query, int udp_fd, const void* peer, size_t peer_len,
                     uint64_t conn_id) {
  if (!IsDnsQuery(query)) return;  // shorter than a header, or not a query: dropped
  auto p = std::make_unique<Pending>();
  p->transport = conn_id != 0 ? v1::DNS_TRANSPORT_TCP : v1::DNS_TRANSPORT_UDP;
  p->udp_fd = udp_fd;
  if (peer != nullptr) {
    std::memcpy(&p->peer, peer, peer_len);
    p->peer_len = static_cast<socklen_t>(peer_len);
  }
  p->conn_id = conn_id;
  p->servfail = *ServfailFor(query);
  p->deadline = Clock::now() + options_.answer_timeout;
  if (in_flight_.size() >= options_.max_in_flight) {
    ReplyServfail(*p);
    return;
  }
  const uint64_t id = ++next_id_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sink_ != nullptr && sink_->Send(id, query, p->transport)) p->epoch = epoch_;
  }
  if (p->epoch == 0) {
    ReplyServfail(*p);
    return;
  }
  if (conn_id != 0) ++conns_[conn_id]->pending;
  in_flight_[id] = std::move(p);
}

void DnsRelay::Reply(const Pending& p, const std::string& message) {
  if (p.conn_id == 0) {
    sendto(p.udp_fd, message.data(), message.size(), MSG_DONTWAIT,
           reinterpret_cast<const sockaddr*>(&p.peer), p.peer_len);
    return;
  }
  auto it = conns_.find(p.conn_id);
  if (it == conns_.end()) return;  // the asker hung up
  Conn& c = *it->second;
  if (c.pending > 0) --c.pending;
  if (message.size() > 0xffff || c.out.size() + message.size() > kMaxTcpOutput) {
    CloseConn(p.conn_id);
    return;
  }
  c.out.push_back(static_cast<char>(message.size() >> 8));
  c.out.push_back(static_cast<char>(message.size() & 0xff));
  c.out.append(message);
  c.last_activity = Clock::now();
  OnConnWritable(p.conn_id);
}

void DnsRelay::ReplyServfail(const Pending& p) { Reply(p, p.servfail); }

void DnsRelay::DrainEvents() {
  std::deque<Event> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    events.swap(events_);
  }
  for (Event& e : events) {
    if (e.kind == Event::Kind::kStreamEnded) {
      for (auto it = in_flight_.begin(); it != in_flight_.end();) {
        if (it->second->epoch != e.epoch) {
          ++it;
          continue;
        }
        ReplyServfail(*it->second);
        it = in_flight_.erase(it);
      }
      continue;
    }
    auto it = in_flight_.find(e.id);
    if (it == in_flight_.end() || it->second->epoch != e.epoch) continue;  // late or foreign
    if (e.message.empty() && e.hold_ms > 0) {
      if (HoldPending(*it->second, e.hold_ms)) continue;
      in_flight_.erase(it);
      continue;
    }
    std::unique_ptr<Pending> p = std::move(it->second);
    in_flight_.erase(it);
    if (e.message.empty()) {
      // The relay chose not to answer: the asker hears nothing.
      if (p->conn_id != 0 && conns_.count(p->conn_id) != 0 && conns_[p->conn_id]->pending > 0) {
        --conns_[p->conn_id]->pending;
      }
      continue;
    }
    Reply(*p, e.message);
  }
}

bool DnsRelay::HoldPending(Pending& p, uint32_t hold_ms) {
  if (!p.held) {
    // Counted when asked: at most max_in_flight entries to look at.
    const size_t held = static_cast<size_t>(std::count_if(
        in_flight_.begin(), in_flight_.end(), [](const auto& e) { return e.second->held; }));
    if (held >= options_.max_held) {
      ReplyServfail(p);
      return false;
    }
    p.held = true;
  }
  const auto hold = std::min(std::chrono::milliseconds(hold_ms), options_.max_hold);
  p.deadline = Clock::now() + hold;
  return true;
}

void DnsRelay::ExpireTimeouts() {
  const Clock::time_point now = Clock::now();
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (it->second->deadline > now) {
      ++it;
      continue;
    }
    ReplyServfail(*it->second);
    it = in_flight_.erase(it);
  }
  std::vector<uint64_t> idle;
  for (const auto& [id, c] : conns_) {
    if (c->pending == 0 && c->out.empty() && now - c->last_activity > options_.tcp_idle_timeout) {
      idle.push_back(id);
    }
  }
  for (uint64_t id : idle) CloseConn(id);
}

}  // namespace lazaret::netrouter
