// The egress channel: a Unix SOCK_SEQPACKET connection between the
// session's network router (lazaret-netrouter, in the sidecar) and the
// egress proxy (lazaret-egressd, on the host), carrying descriptors both
// ways (SCM_RIGHTS):
//   router -> proxy  ACCEPTED  {connection id, local port} + the sandbox's
//                              accepted TCP connection to 127.0.80.1
//                              (egress_endpoint.h)
//   proxy -> router  CONNECT   {request id, family, address, port}
//   router -> proxy  CONNECTED {request id, errno} + on success (errno 0)
//                              a TCP socket connected from the sandbox's
//                              network namespace, so the session's routes
//                              decided
// Each message is one datagram of kMessageBytes, little endian, with a
// version and type header; fields a type does not use must be zero. Both
// descriptors arrive in blocking mode; the receiver sets what it needs.
//
// Linked by the router (sidecar zone) and by lazaret-egressd (host
// service); no gRPC. Each side distrusts the other's bytes: a message of
// the wrong size, version, type or layout, with a descriptor where none
// belongs or without one where one is needed, or with truncated data or
// control data, is an error, and every descriptor that came with it is
// closed.
#ifndef LAZARET_SERVICES_WIRE_EGRESS_CHANNEL_H_
#define LAZARET_SERVICES_WIRE_EGRESS_CHANNEL_H_

#include <sys/types.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/common/fs/fd.h"

namespace lazaret::egress {

inline constexpr uint8_t kChannelVersion = 1;
inline constexpr size_t kMessageBytes = 36;

enum class MessageType : uint8_t {
  kAccepted = 1,
  kConnect = 2,
  kConnected = 3,
};

// One message, decoded. `family` is AF_INET or AF_INET6 in a CONNECT and
// 0 otherwise; an IPv4 address is the first 4 bytes of `address`, the
// rest zero.
struct Message {
  MessageType type = MessageType::kAccepted;
  uint64_t id = 0;
  uint16_t port = 0;
  int family = 0;
  std::array<uint8_t, 16> address{};
  int32_t error = 0;  // CONNECTED: 0 or an errno
};

Message AcceptedMessage(uint64_t connection_id, uint16_t local_port);
Message ConnectedMessage(uint64_t request_id, int error);
// `address` is an IPv4 or IPv6 address in text form.
absl::StatusOr<Message> ConnectMessage(uint64_t request_id, absl::string_view address,
                                       uint16_t port);

// The datagram of a message. Decode checks everything but the descriptor
// (ReceiveWithFd checks that it comes exactly when the type needs one).
std::array<uint8_t, kMessageBytes> Encode(const Message& message);
absl::StatusOr<Message> Decode(const uint8_t* data, size_t size);

// Whether a message of this content carries a descriptor: ACCEPTED, and
// CONNECTED with error 0.
bool CarriesFd(const Message& message);

// Sends one message on a SOCK_SEQPACKET socket, with `fd` attached when
// CarriesFd (the caller keeps its own copy and closes it). `flags` are
// added to MSG_NOSIGNAL (MSG_DONTWAIT on a loop's socket). A message that
// needs a descriptor without one, or has one it must not, is
// InvalidArgument; a full socket (EAGAIN, or SO_SNDTIMEO passed) is
// ResourceExhausted and nothing was sent.
absl::Status SendWithFd(int socket, const Message& message, int fd, int flags = 0);

// Whether SendWithFd failed only because the socket was full.
bool SendWouldBlock(const absl::Status& status);

struct Received {
  Message message;
  fs::UniqueFd fd;  // valid exactly when CarriesFd(message)
};

// Receives one message (recvmsg with MSG_CMSG_CLOEXEC, plus `flags`).
// nullopt: nothing is queued (a non-blocking socket, or MSG_DONTWAIT).
// OutOfRange: the other end closed the channel. Any other error: the
// message broke the protocol (the channel should end); every descriptor
// it carried has been closed.
absl::StatusOr<std::optional<Received>> ReceiveWithFd(int socket, int flags = 0);

// The proxy's end of the channel. Connects to the router's socket, checks
// that the router runs as `peer_uid`, and runs one thread that receives:
// ACCEPTED goes to `on_accepted`, CONNECTED to the Connect call waiting for
// its id. Connect may be called from any number of threads at once. When
// the channel ends (the router went away, or sent something malformed)
// `on_closed` is called once with the reason and every waiting Connect
// fails; the object must then be replaced by a new one.
class EgressChannel {
 public:
  struct Options {
    // A sandbox connection for the proxy: the router's id for it, the port
    // the sandbox connected to (443 or 80) and the socket. Runs on the
    // receive thread: hand the socket off, do not serve it there.
    std::function<void(uint64_t connection_id, uint16_t local_port, fs::UniqueFd fd)> on_accepted;
    std::function<void(const absl::Status& why)> on_closed;
    // The router gives up on a connect after 10 s and says so; this is the
    // limit on waiting for its answer at all.
    std::chrono::milliseconds connect_timeout{15000};
    // Connect calls waiting at once; more fail at once (ResourceExhausted).
    size_t max_waiting = 64;
    // The uid the router must run as (SO_PEERCRED); -1: this process's.
    uid_t peer_uid = static_cast<uid_t>(-1);
  };

  static absl::StatusOr<std::unique_ptr<EgressChannel>> Connect(const std::string& path,
                                                                Options options);
  ~EgressChannel();  // shuts the socket down and joins the receive thread
  EgressChannel(const EgressChannel&) = delete;
  EgressChannel& operator=(const EgressChannel&) = delete;

  // The outcome of the router's connect: a connected socket, or the errno
  // it failed with (EACCES: the session's routes prohibit the address;
  // EPERM: the router refuses such a destination outright - loopback,
  // unspecified, multicast, IPv4-mapped, the namespace's own addresses;
  // EINVAL: port 0; ETIMEDOUT (the router's 10 s limit), ECONNREFUSED,
  // ENETUNREACH as the kernel said). While the router has 64 connects
  // under way it reads no further request, so a burst waits, not fails.
  struct Upstream {
    fs::UniqueFd fd;
    int error = 0;
  };
  // Asks the router to connect to `address` (IPv4 or IPv6 text) : `port`.
  // An error Status means the channel did not answer: closed, broken, or
  // no answer within connect_timeout.
  absl::StatusOr<Upstream> Connect(absl::string_view address, uint16_t port)
      ABSL_LOCKS_EXCLUDED(mu_);

  bool closed() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Waiter {
    bool done = false;
    Upstream result;
  };

  EgressChannel(fs::UniqueFd socket, Options options);
  void ReceiveLoop();
  void Close(const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);

  const fs::UniqueFd socket_;
  const Options options_;
  std::mutex send_mu_;  // one sendmsg at a time
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Waiter*> waiting_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> closed_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace lazaret::egress

#endif  // LAZARET_SERVICES_WIRE_EGRESS_CHANNEL_H_
