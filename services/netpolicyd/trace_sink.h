// A session's trace sink: the SOCK_SEQPACKET socket runsc's remote trace
// sink connects to (gVisor runtime monitoring, the `syscall/connect/exit`
// point), so every connect() of the sandbox, allowed or refused, reaches
// the egress log with the rule that decided it. Runs in
// lazaret-netpolicyd, unprivileged, one thread per session. Bound at
// attach, before the sandbox exists; runsc is started with
// ignore_setup_error false, so a sandbox without its sink does not start.
//
// The peer is the sandbox's Sentry, which gVisor's threat model does not
// trust: exactly one connection is taken, from our own uid (root rootful,
// the user rootless, where runsc runs as the user's mapped root); later
// ones are closed unread. Messages are parsed by trace_message (hard size
// limits; an oversize or malformed one ends the connection), and the
// entries are evidence of what the sandbox tried, never an input to the
// policy.
#ifndef LAZARET_SERVICES_NETPOLICYD_TRACE_SINK_H_
#define LAZARET_SERVICES_NETPOLICYD_TRACE_SINK_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "services/netpolicyd/compile.h"
#include "services/netpolicyd/trace_message.h"

namespace lazaret::netpolicyd {

// The socket's name in the session directory
// (<runtime_dir>/sessions/<id>/trace.sock).
std::string TraceSocketPath(const std::string& runtime_dir, const std::string& id);

// The log entry of one connect: CONNECT_REFUSED when the call failed with
// EACCES, EPERM, ENETUNREACH or EHOSTUNREACH (the route table refused it:
// a prohibit route, or no route), CONNECT_ALLOWED otherwise (the table let
// it through; a peer's refusal or a timeout is in the detail). `policy`
// (may be null) names the deciding rule.
lazaret::netpolicy::v1::LogEntry ConnectEntry(const TraceConnect& connect,
                                              const CompiledPolicy* policy);

class TraceSink {
 public:
  struct Options {
    uid_t peer_uid = 0;  // the only uid whose connection is taken
    // Identical attempts (process, destination, port, outcome) within this
    // window are folded into one entry with a count.
    std::chrono::milliseconds fold_window{1000};
    // Milliseconds since the epoch; tests move it.
    std::function<int64_t()> now_ms;
  };
  // Turns a connect into its entry (the session's current policy).
  using Judge = std::function<lazaret::netpolicy::v1::LogEntry(const TraceConnect&)>;
  using Sink = std::function<void(lazaret::netpolicy::v1::LogEntry)>;

  // Binds `path` (replacing a stale socket there), mode 0600, and starts
  // the thread that serves it.
  static absl::StatusOr<std::unique_ptr<TraceSink>> Create(const std::string& path, Options options,
                                                           Judge judge, Sink sink);
  ~TraceSink();  // stops the thread, unlinks the socket
  TraceSink(const TraceSink&) = delete;
  TraceSink& operator=(const TraceSink&) = delete;

 private:
  TraceSink(std::string path, int listen_fd, int stop_fd, Options options, Judge judge, Sink sink);
  void Serve();
  // Reads one connection until it ends; returns why it ended.
  absl::Status ServeConnection(int fd);
  void Emit(lazaret::netpolicy::v1::LogEntry entry);
  void Fold(lazaret::netpolicy::v1::LogEntry entry);
  void FlushFold(bool force);
  int64_t NowMs() const;

  const std::string path_;
  const int listen_fd_;
  const int stop_fd_;  // an eventfd: readable when the sink stops
  const Options options_;
  const Judge judge_;
  const Sink sink_;
  // Used by the serving thread only.
  uint32_t last_dropped_ = 0;
  std::optional<lazaret::netpolicy::v1::LogEntry> folding_;  // the last attempt logged
  int64_t folding_since_ms_ = 0;
  uint32_t folded_ = 0;  // identical attempts since, not yet logged
  std::thread thread_;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_TRACE_SINK_H_
