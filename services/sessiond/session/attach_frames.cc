#include "services/sessiond/session/attach_frames.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/wire/byte_stream.h"
#include "services/wire/frame.h"

namespace lazaret::cli::session {
namespace {

// The escalation wire's frames over a plain descriptor.
class FdStream final : public escalation::ByteStream {
 public:
  explicit FdStream(int fd) : fd_(fd) {}
  // Waits in poll, not in a blocking read: a thread blocked in read on a
  // Unix socket is woken each time the peer reads what this side sent (the
  // socket's write space), one needless wake-up of the reader per key and
  // per echo. poll waits for input alone.
  absl::StatusOr<size_t> Read(void* buf, size_t len) override {
    while (true) {
      const ssize_t n = recv(fd_, buf, len, MSG_DONTWAIT);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return ErrnoStatus("read of the attach socket", errno);
      pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) return ErrnoStatus("poll", errno);
    }
  }
  absl::Status WriteAll(const void* buf, size_t len) override {
    const char* p = static_cast<const char*>(buf);
    while (len > 0) {
      const ssize_t n = send(fd_, p, len, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ErrnoStatus("write to the attach socket", errno);
      p += n;
      len -= static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }

 private:
  const int fd_;
};

// Collects a frame's bytes (the wire's header and the payload).
class StringStream final : public escalation::ByteStream {
 public:
  absl::StatusOr<size_t> Read(void*, size_t) override { return 0; }
  absl::Status WriteAll(const void* buf, size_t len) override {
    bytes.append(static_cast<const char*>(buf), len);
    return absl::OkStatus();
  }
  std::string bytes;
};

}  // namespace

FramedChannel::~FramedChannel() { close(fd_); }

bool FramedChannel::Read(google::protobuf::MessageLite* message) {
  FdStream stream(fd_);
  absl::StatusOr<std::string> frame = escalation::ReadFrame(stream, kMaxAttachFrame);
  return frame.ok() && message->ParseFromString(*frame);
}

bool FramedChannel::Write(const google::protobuf::MessageLite& message) {
  std::string payload;
  if (!message.SerializeToString(&payload) || payload.size() > kMaxAttachFrame) return false;
  FdStream stream(fd_);
  return escalation::WriteFrame(stream, payload).ok();
}

std::optional<size_t> FramedChannel::TrySend(const google::protobuf::MessageLite& message) {
  std::string payload;
  if (!rest_.empty() || !message.SerializeToString(&payload) || payload.size() > kMaxAttachFrame) {
    return std::nullopt;
  }
  StringStream frame;
  if (!escalation::WriteFrame(frame, payload).ok()) return std::nullopt;
  ssize_t n;
  do {
    n = send(fd_, frame.bytes.data(), frame.bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return std::nullopt;  // the queue and Write take it (or see the end)
  rest_ = frame.bytes.substr(static_cast<size_t>(n));
  return rest_.size();
}

bool FramedChannel::FlushRest() {
  FdStream stream(fd_);
  const bool sent = stream.WriteAll(rest_.data(), rest_.size()).ok();
  rest_.clear();
  return sent;
}

void FramedChannel::ShutdownWrite() { shutdown(fd_, SHUT_WR); }

void FramedChannel::Shutdown() { shutdown(fd_, SHUT_RDWR); }

absl::StatusOr<std::unique_ptr<FramedChannel>> ConnectFramed(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path too long: ", path));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket", errno);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(absl::StrCat("connect to ", path), err);
  }
  return std::make_unique<FramedChannel>(fd);
}

FramedListener::FramedListener(std::unique_ptr<UnixListener> listener, uid_t uid, Serve serve)
    : listener_(std::move(listener)), uid_(uid), serve_(std::move(serve)) {}

absl::StatusOr<std::unique_ptr<FramedListener>> FramedListener::Start(const std::string& path,
                                                                      uid_t uid, Serve serve) {
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener, UnixListener::Bind(path));
  std::unique_ptr<FramedListener> l(new FramedListener(std::move(listener), uid, std::move(serve)));
  if (pipe2(l->wake_, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoStatus("pipe2", errno);
  l->acceptor_ = std::thread(&FramedListener::AcceptLoop, l.get());
  return l;
}

void FramedListener::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listener_->fd(), POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int conn = accept4(listener_->fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != uid_) {
      close(conn);  // another user's process: never attached
      continue;
    }
    Connection c;
    c.channel = std::make_shared<FramedChannel>(conn);
    c.done = std::make_shared<std::atomic<bool>>(false);
    c.thread = std::thread([this, channel = c.channel, done = c.done] {
      serve_(channel.get());
      channel->Shutdown();  // the peer reads the end at once
      *done = true;
    });
    absl::MutexLock lock(&mu_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (*it->done) {
        it->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    connections_.push_back(std::move(c));
  }
}

FramedListener::~FramedListener() {
  if (wake_[1] >= 0) (void)!write(wake_[1], "x", 1);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<Connection> connections;
  {
    absl::MutexLock lock(&mu_);
    for (const Connection& c : connections_) c.channel->Shutdown();
    connections.swap(connections_);
  }
  for (Connection& c : connections) c.thread.join();
  for (int fd : wake_) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace lazaret::cli::session
