// A byte relay between stream sockets: listeners whose accepted connections
// are each joined to a connection the owner opens, with bytes passed both
// ways unchanged. Used by the inbound port forwards, at both ends: in
// lazaret-netrouter (a Unix socket in the router's directory -> TCP to the
// namespace's loopback) and in lazaret-netpolicyd (TCP on the host's
// loopback -> that Unix socket). It reads nothing of what passes; it bounds
// what it holds (connections per listener group, bytes buffered per
// direction), and whichever side closes ends the connection once what it
// sent is passed on. One thread, one epoll loop; no thread per connection.
// The bytes are untrusted in both directions and are never interpreted.
#ifndef LAZARET_SERVICES_COMMON_STREAM_RELAY_H_
#define LAZARET_SERVICES_COMMON_STREAM_RELAY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace lazaret {

// One step of a non-blocking relay, shared by every byte relay (the
// inbound forwards, the router's escalation relay). Reads from `fd` into
// `buf` while it holds less than `cap` bytes; sets `*eof` at the end of
// the stream and `*spoke` (when given) once any byte came. False when the
// socket broke.
bool FillFromSocket(int fd, size_t cap, std::string* buf, bool* eof, bool* spoke = nullptr);
// Sends what `buf` holds as far as `fd` takes it now, and drops what was
// sent. False when the socket broke.
bool DrainToSocket(int fd, std::string* buf);

struct StreamRelayOptions {
  // Connections open at once per group; more are closed at accept.
  size_t max_connections_per_group = 64;
  // Bytes held per direction of a connection; a side whose peer does not
  // read is not read from any further.
  size_t buffer_bytes = 64 * 1024;
};

class StreamRelay {
 public:
  // Opens the far side for one accepted connection: a connected socket
  // (made non-blocking here), or an error (the accepted one is then
  // reset). It runs on the relay's thread: it must not wait long.
  using Connect = std::function<absl::StatusOr<int>()>;
  // Decides whether an accepted connection may be served (for example by
  // its peer's credentials); false closes it at once.
  using Admit = std::function<bool(int fd)>;

  static absl::StatusOr<std::unique_ptr<StreamRelay>> Start(const StreamRelayOptions& options);
  ~StreamRelay();
  StreamRelay(const StreamRelay&) = delete;
  StreamRelay& operator=(const StreamRelay&) = delete;

  // Serves the listening socket `listen_fd` (owned from now on; made
  // non-blocking) in group `group`. Several listeners may share a group
  // (one port on 127.0.0.1 and on ::1); the limit counts the group.
  void AddListener(uint64_t group, int listen_fd, Connect connect, Admit admit = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Closes every listener of `group` and every connection they accepted.
  void RemoveGroup(uint64_t group) ABSL_LOCKS_EXCLUDED(mu_);

  // Connections open now in `group`.
  size_t OpenConnections(uint64_t group) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Listener {
    uint64_t group = 0;
    int fd = -1;
    Connect connect;
    Admit admit;
  };
  struct Pipe {
    uint64_t group = 0;
    int near = -1;  // accepted
    int far = -1;   // opened by Connect
    std::string to_far;
    std::string to_near;
    bool near_eof = false;
    bool far_eof = false;
  };

  StreamRelay(const StreamRelayOptions& options, int epoll_fd, int wake_fd);
  void Loop();
  void OnAccept(uint64_t listener_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Pump(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ClosePipe(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const StreamRelayOptions options_;
  const int epoll_fd_;
  const int wake_fd_;
  std::thread thread_;

  mutable std::mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Listener> listeners_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::unique_ptr<Pipe>> pipes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_STREAM_RELAY_H_
