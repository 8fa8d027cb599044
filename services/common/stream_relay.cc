#include "services/common/stream_relay.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "services/common/log.h"
#include "services/common/status_util.h"

namespace lazaret {
namespace {

// epoll tags: (id << 2) | kind; ids start at 1, so the wake tag is none
// of them.
constexpr uint64_t kWakeTag = ~uint64_t{0};
constexpr uint64_t kNear = 0;
constexpr uint64_t kFar = 1;
constexpr uint64_t kListen = 2;

// Closes with a reset, so a refused peer reads ECONNRESET at once.
void Reset(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

}  // namespace

bool FillFromSocket(int fd, size_t cap, std::string* buf, bool* eof, bool* spoke) {
  char tmp[16384];
  while (!*eof && buf->size() < cap) {
    const ssize_t n = read(fd, tmp, std::min(sizeof(tmp), cap - buf->size()));
    if (n > 0) {
      buf->append(tmp, static_cast<size_t>(n));
      if (spoke != nullptr) *spoke = true;
    } else if (n == 0) {
      *eof = true;
    } else if (errno == EAGAIN) {
      break;
    } else if (errno != EINTR) {
      return false;
    }
  }
  return true;
}

bool DrainToSocket(int fd, std::string* buf) {
  size_t done = 0;
  while (done < buf->size()) {
    const ssize_t n = send(fd, buf->data() + done, buf->size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      break;
    } else if (n < 0 && errno != EINTR) {
      return false;
    }
  }
  buf->erase(0, done);
  return true;
}

absl::StatusOr<std::unique_ptr<StreamRelay>> StreamRelay::Start(
    const StreamRelayOptions& options) {
  if (options.max_connections_per_group == 0 || options.buffer_bytes == 0) {
    return absl::InvalidArgumentError("the relay needs room for a connection and a byte");
  }
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return ErrnoStatus("epoll_create1", errno);
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    const int e = errno;
    close(ep);
    return ErrnoStatus("eventfd", e);
  }
  std::unique_ptr<StreamRelay> relay(new StreamRelay(options, ep, wake));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  epoll_ctl(ep, EPOLL_CTL_ADD, wake, &ev);
  relay->thread_ = std::thread([raw = relay.get()] { raw->Loop(); });
  return relay;
}

StreamRelay::StreamRelay(const StreamRelayOptions& options, int epoll_fd, int wake_fd)
    : options_(options), epoll_fd_(epoll_fd), wake_fd_(wake_fd) {}

StreamRelay::~StreamRelay() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, p] : pipes_) {
    close(p->near);
    close(p->far);
  }
  for (auto& [id, l] : listeners_) close(l.fd);
  close(wake_fd_);
  close(epoll_fd_);
}

void StreamRelay::AddListener(uint64_t group, int listen_fd, Connect connect, Admit admit) {
  fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = ++next_id_;
  listeners_[id] = Listener{group, listen_fd, std::move(connect), std::move(admit)};
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = (id << 2) | kListen;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd, &ev);
}

void StreamRelay::RemoveGroup(uint64_t group) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = listeners_.begin(); it != listeners_.end();) {
    if (it->second.group != group) {
      ++it;
      continue;
    }
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
    close(it->second.fd);
    it = listeners_.erase(it);
  }
  std::vector<uint64_t> ids;
  for (const auto& [id, p] : pipes_) {
    if (p->group == group) ids.push_back(id);
  }
  for (uint64_t id : ids) ClosePipe(id);
}

size_t StreamRelay::OpenConnections(uint64_t group) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(pipes_.begin(), pipes_.end(),
                                           [&](const auto& p) { return p.second->group == group; }));
}

void StreamRelay::Loop() {
  epoll_event events[64];
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events, 64, -1);
    if (n < 0 && errno != EINTR) {
      LAZ_LOG_ERROR << "stream relay: epoll_wait: " << std::strerror(errno);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) {
        uint64_t count;
        (void)!read(wake_fd_, &count, sizeof(count));
        continue;
      }
      const uint64_t id = tag >> 2;
      if ((tag & 3) == kListen) {
        if (listeners_.count(id) != 0) OnAccept(id);
      } else if (pipes_.count(id) != 0) {
        if ((events[i].events & EPOLLERR) != 0) {
          ClosePipe(id);
        } else {
          Pump(id);
        }
      }
    }
  }
}

void StreamRelay::OnAccept(uint64_t listener_id) {
  const Listener& l = listeners_.at(listener_id);
  for (;;) {
    const int c = accept4(l.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return;  // EAGAIN: drained
    if (l.admit && !l.admit(c)) {
      Reset(c);
      continue;
    }
    size_t open = 0;
    for (const auto& [id, p] : pipes_) open += p->group == l.group ? 1 : 0;
    if (open >= options_.max_connections_per_group) {
      Reset(c);
      continue;
    }
    absl::StatusOr<int> far = l.connect();
    if (!far.ok()) {
      Reset(c);
      continue;
    }
    // The loop must never block on a socket.
    fcntl(*far, F_SETFL, fcntl(*far, F_GETFL) | O_NONBLOCK);
    const uint64_t id = ++next_id_;
    auto p = std::make_unique<Pipe>();
    p->group = l.group;
    p->near = c;
    p->far = *far;
    // EPOLLONESHOT: a side that fired stays silent until Pump re-arms it
    // with what it waits for, so a hung-up socket cannot spin the loop.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = (id << 2) | kNear;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c, &ev);
    ev.data.u64 = (id << 2) | kFar;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, *far, &ev);
    pipes_[id] = std::move(p);
  }
}

void StreamRelay::Pump(uint64_t id) {
  Pipe& p = *pipes_.at(id);
  const size_t cap = options_.buffer_bytes;
  if (!FillFromSocket(p.near, cap, &p.to_far, &p.near_eof) ||
      !FillFromSocket(p.far, cap, &p.to_near, &p.far_eof) || !DrainToSocket(p.far, &p.to_far) ||
      !DrainToSocket(p.near, &p.to_near)) {
    ClosePipe(id);
    return;
  }
  // A side that ended gets its end passed on once its bytes are: the
  // other side sees the same half-close a direct peer would cause.
  if (p.near_eof && p.to_far.empty()) shutdown(p.far, SHUT_WR);
  if (p.far_eof && p.to_near.empty()) shutdown(p.near, SHUT_WR);
  if (p.near_eof && p.far_eof && p.to_far.empty() && p.to_near.empty()) {
    ClosePipe(id);
    return;
  }
  const auto arm = [this, id](int fd, uint64_t side, uint32_t interest) {
    if (interest == 0) return;
    epoll_event ev{};
    ev.events = interest | EPOLLONESHOT;
    ev.data.u64 = (id << 2) | side;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
  };
  arm(p.near, kNear,
      (!p.near_eof && p.to_far.size() < cap ? EPOLLIN : 0u) |
          (!p.to_near.empty() ? EPOLLOUT : 0u));
  arm(p.far, kFar,
      (!p.far_eof && p.to_near.size() < cap ? EPOLLIN : 0u) | (!p.to_far.empty() ? EPOLLOUT : 0u));
}

void StreamRelay::ClosePipe(uint64_t id) {
  auto it = pipes_.find(id);
  if (it == pipes_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->near, nullptr);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->far, nullptr);
  close(it->second->near);
  close(it->second->far);
  pipes_.erase(it);
}

}  // namespace lazaret
