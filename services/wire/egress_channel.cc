#include "services/wire/egress_channel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::egress {
namespace {

// Offsets of the fields in a message.
constexpr size_t kVersionAt = 0;
constexpr size_t kTypeAt = 1;
constexpr size_t kFamilyAt = 2;  // 0, 4 or 6
constexpr size_t kReservedAt = 3;
constexpr size_t kErrorAt = 4;       // int32
constexpr size_t kIdAt = 8;          // uint64
constexpr size_t kPortAt = 16;       // uint16
constexpr size_t kReserved2At = 18;  // uint16
constexpr size_t kAddressAt = 20;    // 16 bytes
static_assert(kAddressAt + 16 == kMessageBytes);

// Errnos are small positive numbers; anything else in CONNECTED is garbage.
constexpr int32_t kMaxErrno = 4095;

// Room for a few descriptors, so that a message carrying more than one is
// seen whole (and every one closed) rather than cut by the kernel.
constexpr size_t kMaxFdsSeen = 8;

void PutLe(uint8_t* out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t* in, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(in[i]) << (8 * i);
  return v;
}

bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

const char* TypeName(MessageType t) {
  switch (t) {
    case MessageType::kAccepted:
      return "ACCEPTED";
    case MessageType::kConnect:
      return "CONNECT";
    case MessageType::kConnected:
      return "CONNECTED";
  }
  return "?";
}

}  // namespace

Message AcceptedMessage(uint64_t connection_id, uint16_t local_port) {
  Message m;
  m.type = MessageType::kAccepted;
  m.id = connection_id;
  m.port = local_port;
  return m;
}

Message ConnectedMessage(uint64_t request_id, int error) {
  Message m;
  m.type = MessageType::kConnected;
  m.id = request_id;
  m.error = error;
  return m;
}

absl::StatusOr<Message> ConnectMessage(uint64_t request_id, absl::string_view address,
                                       uint16_t port) {
  Message m;
  m.type = MessageType::kConnect;
  m.id = request_id;
  m.port = port;
  if (address.size() > 64) return absl::InvalidArgumentError("the address is too long");
  const std::string text(address);
  if (inet_pton(AF_INET, text.c_str(), m.address.data()) == 1) {
    m.family = AF_INET;
  } else if (inet_pton(AF_INET6, text.c_str(), m.address.data()) == 1) {
    m.family = AF_INET6;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not an IPv4 or IPv6 address"));
  }
  return m;
}

bool CarriesFd(const Message& message) {
  return message.type == MessageType::kAccepted ||
         (message.type == MessageType::kConnected && message.error == 0);
}

std::array<uint8_t, kMessageBytes> Encode(const Message& m) {
  std::array<uint8_t, kMessageBytes> out{};
  out[kVersionAt] = kChannelVersion;
  out[kTypeAt] = static_cast<uint8_t>(m.type);
  out[kFamilyAt] = m.family == AF_INET ? 4 : m.family == AF_INET6 ? 6 : 0;
  PutLe(&out[kErrorAt], static_cast<uint32_t>(m.error), 4);
  PutLe(&out[kIdAt], m.id, 8);
  PutLe(&out[kPortAt], m.port, 2);
  if (m.family == AF_INET) {
    std::memcpy(&out[kAddressAt], m.address.data(), 4);
  } else if (m.family == AF_INET6) {
    std::memcpy(&out[kAddressAt], m.address.data(), 16);
  }
  return out;
}

absl::StatusOr<Message> Decode(const uint8_t* data, size_t size) {
  if (size != kMessageBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("an egress channel message is ", kMessageBytes, " bytes, not ", size));
  }
  if (data[kVersionAt] != kChannelVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("egress channel version ", data[kVersionAt], " is not ", kChannelVersion));
  }
  Message m;
  const uint8_t type = data[kTypeAt];
  if (type < static_cast<uint8_t>(MessageType::kAccepted) ||
      type > static_cast<uint8_t>(MessageType::kConnected)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown egress channel message type ", type));
  }
  m.type = static_cast<MessageType>(type);
  m.id = GetLe(&data[kIdAt], 8);
  m.port = static_cast<uint16_t>(GetLe(&data[kPortAt], 2));
  m.error = static_cast<int32_t>(static_cast<uint32_t>(GetLe(&data[kErrorAt], 4)));
  const uint8_t family = data[kFamilyAt];
  const auto bad = [&m](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat("malformed ", TypeName(m.type), ": ", why));
  };
  if (data[kReservedAt] != 0 || GetLe(&data[kReserved2At], 2) != 0) {
    return bad("reserved bytes are not zero");
  }
  switch (m.type) {
    case MessageType::kConnect:
      if (m.error != 0) return bad("carries an error");
      if (family == 4) {
        if (!AllZero(&data[kAddressAt + 4], 12)) return bad("bytes past an IPv4 address");
        m.family = AF_INET;
        std::memcpy(m.address.data(), &data[kAddressAt], 4);
      } else if (family == 6) {
        m.family = AF_INET6;
        std::memcpy(m.address.data(), &data[kAddressAt], 16);
      } else {
        return bad("the family is neither 4 nor 6");
      }
      break;
    case MessageType::kAccepted:
      if (m.error != 0) return bad("carries an error");
      if (m.port == 0) return bad("port 0");
      [[fallthrough]];
    case MessageType::kConnected:
      if (family != 0 || !AllZero(&data[kAddressAt], 16)) return bad("carries an address");
      if (m.type == MessageType::kConnected && m.port != 0) return bad("carries a port");
      if (m.error < 0 || m.error > kMaxErrno) return bad("the errno is out of range");
      break;
  }
  return m;
}

absl::Status SendWithFd(int socket, const Message& message, int fd, int flags) {
  if (CarriesFd(message) != (fd >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(TypeName(message.type),
                     CarriesFd(message) ? " needs a descriptor" : " carries no descriptor"));
  }
  std::array<uint8_t, kMessageBytes> bytes = Encode(message);
  iovec iov{bytes.data(), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  for (;;) {
    const ssize_t n = sendmsg(socket, &msg, MSG_NOSIGNAL | flags);
    if (n == static_cast<ssize_t>(bytes.size())) return absl::OkStatus();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return absl::ResourceExhaustedError("the egress channel's other end is not reading");
    }
    if (n < 0) return ErrnoStatus("sending on the egress channel", errno);
    return absl::InternalError("the egress channel took part of a message");
  }
}

bool SendWouldBlock(const absl::Status& status) { return absl::IsResourceExhausted(status); }

absl::StatusOr<std::optional<Received>> ReceiveWithFd(int socket, int flags) {
  std::array<uint8_t, kMessageBytes> bytes{};
  iovec iov{bytes.data(), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsSeen)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
    return ErrnoStatus("receiving on the egress channel", errno);
  }
  // Every descriptor that came, owned at once so each error path closes
  // them; anything but SCM_RIGHTS in the control data is refused.
  std::vector<fs::UniqueFd> fds;
  bool foreign_control = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(0)) {
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds.emplace_back(fd);
      }
    } else {
      foreign_control = true;
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0) {
    return absl::InvalidArgumentError("an egress channel message carried too many descriptors");
  }
  if ((msg.msg_flags & MSG_TRUNC) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("an egress channel message is longer than ", kMessageBytes, " bytes"));
  }
  if (foreign_control) {
    return absl::InvalidArgumentError("an egress channel message carried foreign control data");
  }
  if (n == 0 && fds.empty()) return absl::OutOfRangeError("the egress channel was closed");
  LAZ_ASSIGN_OR_RETURN(Message m, Decode(bytes.data(), static_cast<size_t>(n)));
  const size_t want = CarriesFd(m) ? 1 : 0;
  if (fds.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat("an egress channel ", TypeName(m.type),
                                                   " carried ", fds.size(), " descriptor(s), not ",
                                                   want));
  }
  Received r;
  r.message = m;
  if (want == 1) r.fd = std::move(fds.front());
  return std::optional<Received>(std::move(r));
}

absl::StatusOr<std::unique_ptr<EgressChannel>> EgressChannel::Connect(const std::string& path,
                                                                      Options options) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError("the egress channel's path does not fit a Unix socket");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (options.max_waiting == 0) return absl::InvalidArgumentError("max_waiting is 0");
  if (options.peer_uid == static_cast<uid_t>(-1)) options.peer_uid = geteuid();
  fs::UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("socket", errno);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoStatus(absl::StrCat("connecting to the router's egress channel ", path), errno);
  }
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return ErrnoStatus("SO_PEERCRED of the router's egress channel", errno);
  }
  if (cred.uid != options.peer_uid) {
    return absl::PermissionDeniedError(absl::StrCat("the egress channel ", path,
                                                    " is served by uid ", cred.uid, ", not uid ",
                                                    options.peer_uid));
  }
  // A router that stops reading must not block a sender for ever.
  timeval tv{10, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  std::unique_ptr<EgressChannel> channel(new EgressChannel(std::move(fd), std::move(options)));
  channel->thread_ = std::thread([raw = channel.get()] { raw->ReceiveLoop(); });
  return channel;
}

EgressChannel::EgressChannel(fs::UniqueFd socket, Options options)
    : socket_(std::move(socket)), options_(std::move(options)) {}

EgressChannel::~EgressChannel() {
  shutdown(socket_.get(), SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
}

bool EgressChannel::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_.has_value();
}

void EgressChannel::Close(const absl::Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_.has_value()) return;
    closed_ = why;
  }
  cv_.notify_all();
  shutdown(socket_.get(), SHUT_RDWR);
  if (options_.on_closed) options_.on_closed(why);
}

void EgressChannel::ReceiveLoop() {
  for (;;) {
    absl::StatusOr<std::optional<Received>> r = ReceiveWithFd(socket_.get());
    if (!r.ok()) {
      Close(r.status());
      return;
    }
    if (!r->has_value()) continue;  // a blocking socket: not expected, harmless
    Received& got = **r;
    switch (got.message.type) {
      case MessageType::kAccepted:
        if (options_.on_accepted) {
          options_.on_accepted(got.message.id, got.message.port, std::move(got.fd));
        }
        break;
      case MessageType::kConnected: {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = waiting_.find(got.message.id);
        // An answer after its caller gave up: the socket closes here.
        if (it == waiting_.end()) break;
        it->second->done = true;
        it->second->result.error = got.message.error;
        it->second->result.fd = std::move(got.fd);
        waiting_.erase(it);
        cv_.notify_all();
        break;
      }
      case MessageType::kConnect:
        Close(absl::InvalidArgumentError("the router sent a CONNECT"));
        return;
    }
  }
}

absl::StatusOr<EgressChannel::Upstream> EgressChannel::Connect(absl::string_view address,
                                                               uint16_t port) {
  Waiter waiter;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_.has_value()) {
      return absl::UnavailableError(
          absl::StrCat("the router's egress channel is closed: ", closed_->message()));
    }
    if (waiting_.size() >= options_.max_waiting) {
      return absl::ResourceExhaustedError(
          absl::StrCat("already ", waiting_.size(), " connects wait for the router's answer"));
    }
    id = ++next_id_;
  }
  LAZ_ASSIGN_OR_RETURN(Message request, ConnectMessage(id, address, port));
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_[id] = &waiter;
  }
  absl::Status sent;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    sent = SendWithFd(socket_.get(), request, -1);
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (!sent.ok()) {
    waiting_.erase(id);
    return sent;
  }
  const bool answered = cv_.wait_for(lock, options_.connect_timeout,
                                     [&] { return waiter.done || closed_.has_value(); });
  if (!waiter.done) {
    waiting_.erase(id);
    if (!answered) {
      return absl::DeadlineExceededError(absl::StrCat("the router did not answer a connect within ",
                                                      options_.connect_timeout.count(), " ms"));
    }
    return absl::UnavailableError(
        absl::StrCat("the router's egress channel closed: ", closed_->message()));
  }
  return std::move(waiter.result);
}

}  // namespace lazaret::egress
