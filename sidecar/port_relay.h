// Inbound port forwards, the sandbox's end: for each forwarded sandbox
// port, a listening Unix socket in/<port>.sock in the router's socket
// directory (mode 0600, the name derived from the number alone) whose every
// connection is joined to a TCP connection to the namespace's own loopback
// at that port: 127.0.0.1, else ::1. Nothing else is ever connected to, so
// no path leads out of the namespace and no policy route is involved (the
// loopback addresses match the local table first).
//
// Runs in lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only; no new
// capability). Who may connect: only a peer with the router's own uid (the
// host's netpolicyd, rootful and rootless alike: the router runs as the
// session's user, mapped), checked with SO_PEERCRED; the socket's mode and
// directory already keep others out. The bytes are the sandbox server's and
// the host client's, never read here.
#ifndef LAZARET_SIDECAR_PORT_RELAY_H_
#define LAZARET_SIDECAR_PORT_RELAY_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "services/common/stream_relay.h"

namespace lazaret::netrouter {

struct PortRelayOptions {
  std::string socket_dir;  // the router's socket directory; in/ is made inside
  size_t max_ports = 16;
  size_t max_connections_per_port = 64;
  size_t buffer_bytes = 64 * 1024;
  // The uid a peer must have (the router's own, unless a test says other).
  uid_t peer_uid = static_cast<uid_t>(-1);
};

class PortRelay {
 public:
  static absl::StatusOr<std::unique_ptr<PortRelay>> Create(const PortRelayOptions& options);

  // Opens in/<port>.sock for `sandbox_port` (1 to 65535). Opening one that
  // is open already is a no-op. ResourceExhausted past max_ports.
  absl::Status Open(uint32_t sandbox_port) ABSL_LOCKS_EXCLUDED(mu_);
  // Closes the socket and every connection through it. Closing one that is
  // not open is a no-op.
  absl::Status Close(uint32_t sandbox_port) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<uint32_t> List() const ABSL_LOCKS_EXCLUDED(mu_);

  // The socket path of a port.
  std::string SocketPath(uint32_t sandbox_port) const;

 private:
  PortRelay(const PortRelayOptions& options, std::string in_dir,
            std::unique_ptr<StreamRelay> relay);

  const PortRelayOptions options_;
  const std::string in_dir_;
  const std::unique_ptr<StreamRelay> relay_;
  mutable std::mutex mu_;
  std::set<uint32_t> open_ ABSL_GUARDED_BY(mu_);
};

// A connected TCP socket to `port` on the loopback of the calling
// process's network namespace: 127.0.0.1, else ::1. The connect is bounded
// (a loopback connect answers at once unless the listener's queue is
// full).
absl::StatusOr<int> ConnectNamespaceLoopback(uint16_t port);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_PORT_RELAY_H_
