// The namespace's only resolver: UDP and TCP listeners on 127.0.0.1:53 and
// [::1]:53 that hand every query, as received, to the one open RelayDns
// stream (lazaret-netpolicyd) and send back what it answers for the query's
// id. Runs in lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN only;
// port 53 without CAP_NET_BIND_SERVICE through the sidecar's
// ip_unprivileged_port_start=53). Askers are any process of the sandbox:
// untrusted, so everything is bounded - queries in flight, message sizes,
// TCP connections and their idle time - and the router reads no more DNS
// than dns_message.h does. The relay's answers are passed on as they are.
#ifndef LAZARET_SIDECAR_DNS_RELAY_H_
#define LAZARET_SIDECAR_DNS_RELAY_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/netrouter/v1/netrouter.pb.h"

namespace lazaret::netrouter {

// The open RelayDns stream as the relay sees it. Both calls happen with the
// relay's lock held and must not call back into the relay.
class DnsRelaySink {
 public:
  virtual ~DnsRelaySink() = default;
  // Queues one query to the stream; false when the stream is ending.
  virtual bool Send(uint64_t id, const std::string& message, v1::DnsTransport transport) = 0;
  // A newer stream took over: end this one.
  virtual void Replace() = 0;
};

struct DnsRelayOptions {
  std::vector<std::string> addresses = {"127.0.0.1", "::1"};
  uint16_t port = 53;
  size_t max_in_flight = 256;
  std::chrono::milliseconds answer_timeout{5000};
  size_t max_udp_query = 4096;
  size_t max_tcp_connections = 16;
  std::chrono::milliseconds tcp_idle_timeout{10000};
  // A query the relay holds for an approver (DnsAnswer.hold_ms) waits at
  // most this long, and at most max_held queries are held at once (past
  // that, a hold is answered SERVFAIL): a sandbox cannot pile up queries
  // that outlive the usual answer_timeout.
  std::chrono::milliseconds max_hold{300000};
  size_t max_held = 64;
};

class DnsRelay {
 public:
  // Binds every listener (an IPv6 address the namespace lacks is skipped
  // with a warning; any other failure is an error) and starts the loop.
  static absl::StatusOr<std::unique_ptr<DnsRelay>> Start(const DnsRelayOptions& options);
  ~DnsRelay();
  DnsRelay(const DnsRelay&) = delete;
  DnsRelay& operator=(const DnsRelay&) = delete;

  // A stream opens (replacing the one before); returns its epoch.
  uint64_t Attach(DnsRelaySink* sink);
  // The stream of `epoch` ended; its queries in flight get SERVFAIL.
  void Detach(uint64_t epoch);
  // What the stream of `epoch` answered for `id` (empty: no answer at all).
  // An empty message with `hold_ms` > 0 answers nothing yet: the query stays
  // pending for min(hold_ms, max_hold) from now (a held TCP query keeps its
  // connection from idling out).
  void Answer(uint64_t epoch, uint64_t id, std::string message, uint32_t hold_ms = 0);

 private:
  struct Event {
    enum class Kind { kAnswer, kStreamEnded } kind;
    uint64_t epoch;
    uint64_t id;
    std::string message;
    uint32_t hold_ms = 0;
  };
  struct Conn;
  struct Pending;

  DnsRelay(const DnsRelayOptions& options, int epoll_fd, int wake_fd);
  void Loop();
  void OnUdp(int fd);
  void OnAccept(int fd);
  void OnConnReadable(uint64_t conn_id);
  void OnConnWritable(uint64_t conn_id);
  void CloseConn(uint64_t conn_id);
  void Relay(std::string query, int udp_fd, const void* peer, size_t peer_len, uint64_t conn_id);
  void Reply(const Pending& p, const std::string& message);
  void ReplyServfail(const Pending& p);
  void DrainEvents();
  // Holds `p` (DnsAnswer.hold_ms); false when the hold was refused: past
  // max_held, SERVFAIL is sent and the caller drops `p`.
  bool HoldPending(Pending& p, uint32_t hold_ms);
  void ExpireTimeouts();

  const DnsRelayOptions options_;
  const int epoll_fd_;
  const int wake_fd_;
  std::vector<int> udp_fds_;
  std::vector<int> listen_fds_;
  std::thread thread_;

  std::mutex mu_;
  DnsRelaySink* sink_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Loop thread only.
  uint64_t next_id_ = 0;
  uint64_t next_conn_ = 0;
  std::map<uint64_t, std::unique_ptr<Pending>> in_flight_;
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;
};

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_DNS_RELAY_H_
