#include "sidecar/escalation_relay.h"

#include <arpa/inet.h>
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
#include "services/common/stream_relay.h"
#include "services/vocab/host_path.h"

namespace lazaret::netrouter {
namespace {

using Clock = std::chrono::steady_clock;

// epoll tags: a pipe's side is (id << 1) | side, ids start at 1; the two
// reserved values cannot be one of those.
constexpr uint64_t kRelayListenTag = ~uint64_t{0};
constexpr uint64_t kRelayWakeTag = ~uint64_t{0} - 1;
constexpr uint64_t kClientSide = 0;
constexpr uint64_t kBrokerSide = 1;

// Closes with a reset: a client that is refused before the broker said
// anything reads ECONNRESET, which lazaret-escalate reports as "broker
// unreachable" (exit 242), not as a protocol error.
void ResetConnection(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

// Logged at counts 1, 2, 4, 8, ...: a flood of refusals cannot flood the log.
bool RelayWorthLogging(uint64_t count) { return (count & (count - 1)) == 0; }

}  // namespace

struct EscalationRelay::Pipe {
  int client = -1;
  int broker = -1;
  std::string to_broker;  // read from the client, not yet written
  std::string to_client;  // read from the broker, not yet written
  bool client_eof = false;
  bool broker_eof = false;
  bool broker_spoke = false;
  Clock::time_point accepted;
};

absl::StatusOr<std::unique_ptr<EscalationRelay>> EscalationRelay::Start(
    const EscalationRelayOptions& options) {
  sockaddr_un broker{};
  broker.sun_family = AF_UNIX;
  if (!vocab::IsCleanAbsolutePath(options.broker_socket) ||
      options.broker_socket.size() >= sizeof(broker.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the broker's socket \"", options.broker_socket.substr(0, 200),
                     "\" is not a clean absolute path that fits a Unix socket address"));
  }
  std::memcpy(broker.sun_path, options.broker_socket.data(), options.broker_socket.size());
  if (options.max_connections == 0 || options.buffer_bytes == 0) {
    return absl::InvalidArgumentError("the relay needs room for a connection and a byte");
  }

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(options.port);
  if (inet_pton(AF_INET, options.address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", options.address.substr(0, 64), "\" is not an IPv4 address"));
  }
  const int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd < 0) return ErrnoStatus("socket", errno);
  // No SO_REUSEADDR or SO_REUSEPORT: nobody may bind the port beside it.
  if (bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd, static_cast<int>(options.max_connections)) != 0) {
    const int e = errno;
    close(listen_fd);
    return ErrnoStatus(absl::StrCat("the escalation relay listening on ", options.address, ":",
                                    options.port, "/tcp"),
                       e);
  }
  sockaddr_in bound{};
  socklen_t bound_len = sizeof(bound);
  if (getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    const int e = errno;
    close(listen_fd);
    return ErrnoStatus("getsockname", e);
  }
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    const int e = errno;
    close(listen_fd);
    return ErrnoStatus("epoll_create1", e);
  }
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int e = errno;
    close(ep);
    close(listen_fd);
    return ErrnoStatus("eventfd", e);
  }
  std::unique_ptr<EscalationRelay> relay(
      new EscalationRelay(options, broker, listen_fd, ep, wake, ntohs(bound.sin_port)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kRelayListenTag;
  epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev);
  ev.data.u64 = kRelayWakeTag;
  epoll_ctl(ep, EPOLL_CTL_ADD, wake, &ev);
  relay->thread_ = std::thread([raw = relay.get()] { raw->Loop(); });
  return relay;
}

EscalationRelay::EscalationRelay(const EscalationRelayOptions& options, const sockaddr_un& broker,
                                 int listen_fd, int epoll_fd, int wake_fd, uint16_t port)
    : options_(options),
      broker_(broker),
      listen_fd_(listen_fd),
      epoll_fd_(epoll_fd),
      wake_fd_(wake_fd),
      port_(port) {}

EscalationRelay::~EscalationRelay() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  for (auto& [id, p] : pipes_) {
    close(p->client);
    close(p->broker);
  }
  close(listen_fd_);
  close(wake_fd_);
  close(epoll_fd_);
}

EscalationRelay::Counters EscalationRelay::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_;
}

void EscalationRelay::Publish() {
  counters_.open = pipes_.size();
  std::lock_guard<std::mutex> lock(mu_);
  published_ = counters_;
}

void EscalationRelay::Loop() {
  epoll_event events[64];
  for (;;) {
    int timeout_ms = -1;
    const Clock::time_point now = Clock::now();
    for (const auto& [id, p] : pipes_) {
      if (p->broker_spoke) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          p->accepted + options_.first_answer_timeout - now);
      const int ms = std::max<int>(0, static_cast<int>(left.count()) + 1);
      timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
    }
    const int n = epoll_wait(epoll_fd_, events, 64, timeout_ms);
    if (n < 0 && errno != EINTR) {
      LAZ_LOG_ERROR << "escalation relay: epoll_wait: " << std::strerror(errno);
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kRelayListenTag) {
        OnAccept();
      } else if (tag == kRelayWakeTag) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof(count));
      } else {
        OnEvent(tag >> 1, events[i].events);
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    ExpireFirstAnswers();
    Publish();
  }
}

void EscalationRelay::OnAccept() {
  for (;;) {
    const int c = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return;  // EAGAIN: drained; anything else: the next wake retries
    if (pipes_.size() >= options_.max_connections) {
      ResetConnection(c);
      if (RelayWorthLogging(++counters_.over_limit)) {
        LAZ_LOG_WARNING << "escalation relay: " << counters_.over_limit
                        << " connection(s) refused at the limit of " << options_.max_connections;
      }
      continue;
    }
    // A Unix stream connect does not wait: it succeeds, or fails at once
    // (no socket, refused, or EAGAIN when the broker's backlog is full).
    const int b = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (b < 0 || connect(b, reinterpret_cast<const sockaddr*>(&broker_), sizeof(broker_)) != 0) {
      const int e = errno;
      if (b >= 0) close(b);
      ResetConnection(c);
      if (RelayWorthLogging(++counters_.unreachable)) {
        LAZ_LOG_WARNING << "escalation relay: the broker at " << options_.broker_socket
                        << " is unreachable (" << std::strerror(e) << "); " << counters_.unreachable
                        << " connection(s) refused so far";
      }
      continue;
    }
    const uint64_t id = ++next_id_;
    auto p = std::make_unique<Pipe>();
    p->client = c;
    p->broker = b;
    p->accepted = Clock::now();
    // EPOLLONESHOT: a side that fired stays silent until Pump re-arms it
    // with what it is waiting for, so a hung-up socket with nothing left
    // to do cannot wake the loop again and again.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = (id << 1) | kClientSide;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c, &ev);
    ev.data.u64 = (id << 1) | kBrokerSide;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, b, &ev);
    pipes_[id] = std::move(p);
  }
}

void EscalationRelay::OnEvent(uint64_t id, uint32_t events) {
  if (pipes_.count(id) == 0) return;
  if ((events & EPOLLERR) != 0) {
    Close(id);
    return;
  }
  Pump(id);
}

void EscalationRelay::Pump(uint64_t id) {
  Pipe& p = *pipes_.at(id);
  const size_t cap = options_.buffer_bytes;
  if (!FillFromSocket(p.client, cap, &p.to_broker, &p.client_eof) ||
      !FillFromSocket(p.broker, cap, &p.to_client, &p.broker_eof, &p.broker_spoke) ||
      !DrainToSocket(p.broker, &p.to_broker) || !DrainToSocket(p.client, &p.to_client)) {
    Close(id);
    return;
  }
  // The broker ends every exchange by closing: once its last byte is
  // passed on, the connection is over.
  if (p.broker_eof && p.to_client.empty()) {
    Close(id);
    return;
  }
  // lazaret-escalate never half-closes: a client that stopped sending has
  // left, and once what it sent is passed on its slot is free again (the
  // broker sees its end close as it would a direct client's).
  if (p.client_eof && p.to_broker.empty()) {
    Close(id);
    return;
  }
  const auto arm = [this, id](int fd, uint64_t side, uint32_t interest) {
    if (interest == 0) return;  // stays disarmed (or fires once more, then is)
    epoll_event ev{};
    ev.events = interest | EPOLLONESHOT;
    ev.data.u64 = (id << 1) | side;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  };
  arm(p.client, kClientSide,
      (!p.client_eof && p.to_broker.size() < cap ? EPOLLIN : 0u) |
          (!p.to_client.empty() ? EPOLLOUT : 0u));
  arm(p.broker, kBrokerSide,
      (!p.broker_eof && p.to_client.size() < cap ? EPOLLIN : 0u) |
          (!p.to_broker.empty() ? EPOLLOUT : 0u));
}

void EscalationRelay::Close(uint64_t id) {
  auto it = pipes_.find(id);
  if (it == pipes_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->client, nullptr);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->broker, nullptr);
  close(it->second->client);
  close(it->second->broker);
  pipes_.erase(it);
}

void EscalationRelay::ExpireFirstAnswers() {
  const Clock::time_point now = Clock::now();
  std::vector<uint64_t> late;
  for (const auto& [id, p] : pipes_) {
    if (!p->broker_spoke && now - p->accepted >= options_.first_answer_timeout) late.push_back(id);
  }
  for (uint64_t id : late) {
    ++counters_.first_answer_timeouts;
    Close(id);
  }
}

}  // namespace lazaret::netrouter
