// Inbound port forwards, the host's end: for each forward, listening TCP
// sockets on the host (127.0.0.1 and ::1 unless the user named another
// address) whose every connection is joined to the session router's
// in/<sandbox_port>.sock (sidecar/port_relay.h), which reaches the
// sandbox's own loopback. Runs in lazaret-netpolicyd (host network
// namespace, the user's uid, no capabilities). Requests come from the
// user's own `lazaret` (the socket admits only the user); the bytes are the
// sandbox server's and the host client's, never read here. Any local
// process that can reach the host port can reach the forwarded server,
// as with `docker -p` (docs/networking.md).
#ifndef LAZARET_SERVICES_NETPOLICYD_INBOUND_PORTS_H_
#define LAZARET_SERVICES_NETPOLICYD_INBOUND_PORTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/common/v1/common.pb.h"
#include "services/common/stream_relay.h"

namespace lazaret::netpolicyd {

inline constexpr uint32_t kMinHostPort = 1024;
inline constexpr size_t kMaxForwardsPerSession = 16;

class InboundPorts {
 public:
  // `runtime_dir`: where <runtime_dir>/sessions/<id>/router/in/ is.
  static absl::StatusOr<std::unique_ptr<InboundPorts>> Create(std::string runtime_dir);

  // Checks and binds a forward's host sockets (no SO_REUSEADDR: a busy
  // port is an error naming it) and serves them. `port` is filled in:
  // sandbox_port defaults to host_port. The caller has opened the router's
  // end first.
  absl::StatusOr<std::vector<lazaret::common::v1::PortForward>> Add(
      const std::string& session_id, lazaret::common::v1::PortForward port)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Closes the forward of `host_port` (on every address) and its
  // connections. NotFound when there is none. `*sandbox_port_unused` says
  // whether no other forward of the session still uses its sandbox port.
  absl::StatusOr<std::vector<lazaret::common::v1::PortForward>> Remove(
      const std::string& session_id, uint32_t host_port, uint32_t* sandbox_port,
      bool* sandbox_port_unused) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<lazaret::common::v1::PortForward> List(const std::string& session_id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Detach or end: every forward of the session goes.
  void CloseSession(const std::string& session_id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Forward {
    uint64_t group = 0;
    lazaret::common::v1::PortForward port;
  };
  InboundPorts(std::string runtime_dir, std::unique_ptr<StreamRelay> relay);
  std::vector<lazaret::common::v1::PortForward> ListLocked(const std::string& session_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string runtime_dir_;
  const std::unique_ptr<StreamRelay> relay_;
  mutable std::mutex mu_;
  uint64_t next_group_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::vector<Forward>> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_INBOUND_PORTS_H_
