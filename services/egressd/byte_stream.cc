#include "services/egressd/byte_stream.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace lazaret::egressd {
namespace {

// Waits until `stream` may make progress for the call that last returned
// kAgain; false when `deadline` passed first.
bool WaitStream(ByteStream& stream, absl::Time deadline) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{stream.fd(), stream.WantEvents(), 0};
    const int64_t ms = std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 60'000);
    const int r = poll(&p, 1, static_cast<int>(ms));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true;  // the next call reports the error
  }
}

}  // namespace

SocketStream::SocketStream(fs::UniqueFd fd) : fd_(std::move(fd)), want_(POLLIN) {
  const int flags = fcntl(fd_.get(), F_GETFL);
  if (flags >= 0) fcntl(fd_.get(), F_SETFL, flags | O_NONBLOCK);
}

IoStatus SocketStream::Read(char* buf, size_t cap, size_t* done) {
  *done = 0;
  while (true) {
    const ssize_t n = recv(fd_.get(), buf, cap, 0);
    if (n > 0) {
      *done = static_cast<size_t>(n);
      return IoStatus::kOk;
    }
    if (n == 0) return IoStatus::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      want_ = POLLIN;
      return IoStatus::kAgain;
    }
    last_error_ = strerror(errno);
    return IoStatus::kError;
  }
}

IoStatus SocketStream::Write(const char* data, size_t len, size_t* done) {
  *done = 0;
  if (write_shut_) return IoStatus::kError;
  while (true) {
    const ssize_t n = send(fd_.get(), data, len, MSG_NOSIGNAL);
    if (n >= 0) {
      *done = static_cast<size_t>(n);
      if (n == 0 && len > 0) {
        want_ = POLLOUT;
        return IoStatus::kAgain;
      }
      return IoStatus::kOk;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      want_ = POLLOUT;
      return IoStatus::kAgain;
    }
    last_error_ = strerror(errno);
    return IoStatus::kError;
  }
}

void SocketStream::ShutdownWrite() {
  if (write_shut_) return;
  write_shut_ = true;
  shutdown(fd_.get(), SHUT_WR);
}

IoStatus ReadBefore(ByteStream& stream, char* buf, size_t cap, size_t* done, absl::Time deadline) {
  while (true) {
    const IoStatus s = stream.Read(buf, cap, done);
    if (s != IoStatus::kAgain) return s;
    if (stream.HasBuffered()) continue;
    if (!WaitStream(stream, deadline)) return IoStatus::kAgain;
  }
}

IoStatus WriteAllBefore(ByteStream& stream, absl::string_view data, absl::Time deadline) {
  while (!data.empty()) {
    size_t done = 0;
    const IoStatus s = stream.Write(data.data(), data.size(), &done);
    if (s == IoStatus::kOk) {
      data.remove_prefix(done);
      continue;
    }
    if (s != IoStatus::kAgain) return IoStatus::kError;
    if (!WaitStream(stream, deadline)) return IoStatus::kAgain;
  }
  return IoStatus::kOk;
}

}  // namespace lazaret::egressd
