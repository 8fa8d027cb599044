// The sandbox's path to the egress proxy, the router's end: TCP listeners
// on 127.0.80.1:443 and :80 (services/wire/egress_endpoint.h; the session's
// DNS answers every intercepted name with that address) and the egress
// channel, a Unix SOCK_SEQPACKET socket in the router's directory that
// lazaret-egressd connects to (services/wire/egress_channel.h). Each
// accepted sandbox connection is handed to the proxy at once (ACCEPTED,
// the descriptor attached) and closed here; with no proxy attached it is
// reset at once, so a missing or crashed proxy fails closed. The proxy asks
// for upstream connections (CONNECT) and gets sockets connected from this
// namespace (CONNECTED), so the session's routes decide where it may go,
// exactly as for the sandbox: a prohibit route answers EACCES.
//
// Runs in lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only, no
// new capability: ports 80 and 443 are above the sidecar's
// ip_unprivileged_port_start). The listeners bind before the router
// answers, so before the sandbox exists. Trust: the sandbox's connections
// are never read from, only passed on; the channel admits one peer at a
// time with the router's own uid (SO_PEERCRED), and even that peer's
// requests are checked and bounded: never a loopback, unspecified,
// multicast, IPv4-mapped or own address, never port 0, at most
// max_connects connects at once, each bounded in time; requests are not
// read while max_queued messages wait for the peer. One thread, one epoll
// loop.
#ifndef LAZARET_SIDECAR_EGRESS_LISTENER_H_
#define LAZARET_SIDECAR_EGRESS_LISTENER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "services/common/fs/fd.h"
#include "services/wire/egress_channel.h"
#include "services/wire/egress_endpoint.h"

namespace lazaret::netrouter {

struct EgressListenerOptions {
  // The channel's socket as the sidecar sees it: a clean absolute path
  // that fits a Unix socket address, in the router's directory.
  std::string socket_path;
  std::string address = egress::kProxyAddress;  // IPv4
  uint16_t https_port = egress::kHttpsPort;     // 0: any (tests)
  uint16_t http_port = egress::kHttpPort;       // 0: any (tests)
  // The uid the proxy must have; -1: this process's own.
  uid_t peer_uid = static_cast<uid_t>(-1);
  // Sandbox connections the kernel queues before they are accepted.
  int backlog = 128;
  // Messages waiting for the proxy to read them; a sandbox connection
  // accepted while this many wait is reset.
  size_t max_queued = 256;
  size_t max_connects = 64;
  std::chrono::milliseconds connect_timeout{10000};
};

// Whether the router refuses to connect to this address whatever the
// routes say: loopback (127/8, ::1), unspecified (0/8, ::), multicast
// (224/4, ff00::/8), limited broadcast, IPv4-mapped (::ffff:0:0/96), or an
// address of one of the namespace's own interfaces. `family` AF_INET
// (4 bytes) or AF_INET6 (16 bytes). An error reading the interfaces
// refuses (true).
bool RefusedDestination(int family, const uint8_t* address);

class EgressListener {
 public:
  // Checks the options, binds both TCP listeners and the channel's socket
  // (mode 0600; a stale file is replaced) and starts the loop. Any failure
  // is an error: the router then does not answer and the session does not
  // start.
  static absl::StatusOr<std::unique_ptr<EgressListener>> Start(
      const EgressListenerOptions& options);
  ~EgressListener();  // resets what it holds, removes the socket file
  EgressListener(const EgressListener&) = delete;
  EgressListener& operator=(const EgressListener&) = delete;

  uint16_t https_port() const { return https_port_; }
  uint16_t http_port() const { return http_port_; }

  // For tests and the log.
  struct Counters {
    bool attached = false;  // a proxy is connected
    uint64_t handed = 0;    // sandbox connections sent to the proxy
    uint64_t reset_no_proxy = 0;
    uint64_t reset_queue_full = 0;
    uint64_t peers_refused = 0;     // wrong uid, or a live proxy already attached
    uint64_t connects_refused = 0;  // refused without trying
    uint64_t connects_failed = 0;
    uint64_t connects_ok = 0;
    size_t connecting = 0;
  };
  Counters counters() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Outgoing {
    egress::Message message;
    fs::UniqueFd fd;
  };
  struct Pending {
    uint64_t request_id = 0;
    fs::UniqueFd fd;
    std::chrono::steady_clock::time_point deadline;
  };

  EgressListener(const EgressListenerOptions& options, fs::UniqueFd https, fs::UniqueFd http,
                 fs::UniqueFd channel, fs::UniqueFd epoll, fs::UniqueFd wake, uint16_t https_port,
                 uint16_t http_port);
  void Loop();
  void OnTcpAccept(int listen_fd, uint16_t port);
  void OnChannelAccept();
  void OnPeer(uint32_t events);
  void ReadRequests();
  void HandleConnect(const egress::Message& request);
  void OnConnectDone(uint64_t tag);
  void ExpireConnects();
  void Reply(uint64_t request_id, int error, fs::UniqueFd fd = fs::UniqueFd());
  void Flush();
  void ArmPeer();
  void DropPeer(const std::string& why);
  void Publish() ABSL_LOCKS_EXCLUDED(mu_);

  const EgressListenerOptions options_;
  const fs::UniqueFd https_;
  const fs::UniqueFd http_;
  const fs::UniqueFd channel_;
  const fs::UniqueFd epoll_;
  const fs::UniqueFd wake_;
  const uint16_t https_port_;
  const uint16_t http_port_;
  std::thread thread_;

  mutable std::mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Counters published_ ABSL_GUARDED_BY(mu_);

  // Loop thread only.
  fs::UniqueFd peer_;
  std::deque<Outgoing> queue_;
  uint64_t next_connection_id_ = 0;
  uint64_t next_tag_ = 0;
  std::map<uint64_t, Pending> connects_;  // by epoll tag
  Counters counters_;
};

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_EGRESS_LISTENER_H_
