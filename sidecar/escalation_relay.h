// The session's escalation relay: a TCP listener on the loopback of the
// network namespace the sandbox shares with the sidecar (127.0.0.1:7457,
// services/wire/relay_endpoint.h) that connects each accepted connection to
// the broker's escalate.sock (the session's socket directory, bound
// read-only into the sidecar) and passes bytes both ways unchanged. This is
// what lets escalation work without runsc's host-uds flag: the sandbox
// reaches no host Unix socket at all, only this port (docs/escalation.md).
//
// Runs in lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only; the
// listener binds before the router answers, so before the sandbox exists).
// Its peers are any process of the sandbox: untrusted. It reads nothing of
// what passes - the TLS 1.3 session is between lazaret-escalate and the
// broker, which makes every check (SO_PEERCRED sees this process: the
// sidecar's uid, the broker's own; the certificate names the session) - and
// it bounds what it holds: connections (the broker's 64 per session), bytes
// buffered per direction, and the time until the broker first speaks. After
// that the broker's own deadlines govern the connection, and whichever side
// closes ends it. One thread, one epoll loop; no thread per connection.
#ifndef LAZARET_SIDECAR_ESCALATION_RELAY_H_
#define LAZARET_SIDECAR_ESCALATION_RELAY_H_

#include <sys/un.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "services/wire/relay_endpoint.h"

namespace lazaret::netrouter {

struct EscalationRelayOptions {
  // The broker's socket as the sidecar sees it; a clean absolute path that
  // fits a Unix socket address.
  std::string broker_socket;
  std::string address = escalation::kRelayAddress;  // IPv4
  uint16_t port = escalation::kRelayPort;           // 0: any (tests)
  // The broker serves 64 connections per session; more are closed at once.
  size_t max_connections = 64;
  // The broker answers a ClientHello at once and ends a connection that
  // has not sent its request within 10 s; one to which it has sent nothing
  // by this time is closed here.
  std::chrono::milliseconds first_answer_timeout{15000};
  // Bytes held per direction of a connection; a side whose peer does not
  // read is not read from any further (TCP's and the socket's own windows
  // then push back).
  size_t buffer_bytes = 64 * 1024;
};

class EscalationRelay {
 public:
  // Checks the options and binds the listener (any failure is an error:
  // the router then does not answer and the session does not start), then
  // starts the loop. The broker's socket need not exist yet: it is
  // connected per connection, so a restarted broker is reached by the next
  // connection.
  static absl::StatusOr<std::unique_ptr<EscalationRelay>> Start(
      const EscalationRelayOptions& options);
  ~EscalationRelay();
  EscalationRelay(const EscalationRelay&) = delete;
  EscalationRelay& operator=(const EscalationRelay&) = delete;

  // The port the listener is bound to (options.port unless that was 0).
  uint16_t port() const { return port_; }

  // For tests and the log: connections open now, and those ever closed at
  // once because the broker could not be reached or the limit was reached.
  struct Counters {
    size_t open = 0;
    uint64_t unreachable = 0;
    uint64_t over_limit = 0;
    uint64_t first_answer_timeouts = 0;
  };
  Counters counters() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Pipe;

  EscalationRelay(const EscalationRelayOptions& options, const sockaddr_un& broker, int listen_fd,
                  int epoll_fd, int wake_fd, uint16_t port);
  void Loop();
  void OnAccept();
  void OnEvent(uint64_t id, uint32_t events);
  // Moves what can be moved on pipe `id` and re-arms its descriptors;
  // closes it when it is done or broken.
  void Pump(uint64_t id);
  void Close(uint64_t id);
  void ExpireFirstAnswers();
  void Publish() ABSL_LOCKS_EXCLUDED(mu_);

  const EscalationRelayOptions options_;
  const sockaddr_un broker_;
  const int listen_fd_;
  const int epoll_fd_;
  const int wake_fd_;
  const uint16_t port_;
  std::thread thread_;

  mutable std::mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Counters published_ ABSL_GUARDED_BY(mu_);

  // Loop thread only.
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::unique_ptr<Pipe>> pipes_;
  Counters counters_;
};

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_ESCALATION_RELAY_H_
