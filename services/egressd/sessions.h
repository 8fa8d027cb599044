// The sessions lazaret-egressd serves. Each ProxySession holds what one
// session's proxy is made of: its RequestGuard (rules, secrets), its CA,
// its egress channel to the session's router, the connections being
// served (one thread each, bounded), and its request log. The table is
// what the gRPC service (egressd.h) works on.
#ifndef LAZARET_SERVICES_EGRESSD_SESSIONS_H_
#define LAZARET_SERVICES_EGRESSD_SESSIONS_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/egress/v1/egress.pb.h"
#include "services/common/fs/fd.h"
#include "services/egressd/ca.h"
#include "services/egressd/guard.h"
#include "services/egressd/request_log.h"
#include "services/egressd/tls.h"
#include "services/egressd/upstream.h"
#include "services/wire/egress_channel.h"

namespace lazaret::egressd {

// A session's request log: the newest records in memory, numbered, with a
// wait for new ones (WatchRequests follow).
class RequestLog {
 public:
  explicit RequestLog(size_t capacity) : capacity_(capacity) {}
  // Also appends each record, one protobuf JSON mapping per line, to
  // `path` (created 0600; its directory must exist), up to kMaxFileBytes;
  // then one last line says the rest was not kept.
  void WriteTo(fs::UniqueFd file) ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr uint64_t kMaxFileBytes = 16u << 20;
  void Add(lazaret::egress::v1::RequestRecord record) ABSL_LOCKS_EXCLUDED(mu_);
  // Records numbered `*next` and later (the oldest kept when those are
  // gone); waits up to `wait` when there are none. Advances `*next`.
  std::vector<lazaret::egress::v1::RequestRecord> Read(uint64_t* next,
                                                       std::chrono::milliseconds wait)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Close() ABSL_LOCKS_EXCLUDED(mu_);
  bool closed() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t total() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t refused() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<lazaret::egress::v1::RequestRecord> records_ ABSL_GUARDED_BY(mu_);
  uint64_t first_ ABSL_GUARDED_BY(mu_) = 0;  // the number of records_.front()
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  fs::UniqueFd file_ ABSL_GUARDED_BY(mu_);
  uint64_t file_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// The request log of a session that is no longer attached: its file in
// `dir` (<dir>/<session>.jsonl), oldest first. NotFound without one.
absl::StatusOr<std::vector<lazaret::egress::v1::RequestRecord>> ReadRequestLogFile(
    const std::string& dir, const std::string& session_id);

// Keeps the `keep` most recently written files of `dir` and removes the
// rest (best effort).
void PruneRequestLogs(const std::string& dir, size_t keep);

lazaret::egress::v1::RequestRecord ToProto(const RequestRecord& r);

// Makes the dialer of a session: how its proxy reaches upstreams.
using DialerFactory = std::function<std::unique_ptr<UpstreamDialer>(
    const std::string& session_id, egress::EgressChannel* channel)>;

// The production dialer: lazaret-netpolicyd's ResolveUpstream for the
// addresses (the session's policy decides and installs the name routes),
// then the router's CONNECT through `channel` for each in turn.
std::unique_ptr<UpstreamDialer> NetPolicyDialer(const std::string& netpolicyd_socket,
                                                const std::string& session_id,
                                                egress::EgressChannel* channel);

class ProxySession {
 public:
  struct Limits {
    // Connections served at once; more are closed at once (reset).
    size_t max_connections = 256;
    size_t log_records = 10000;
  };

  // Builds the guard and the CA, connects to the router's egress socket.
  static absl::StatusOr<std::shared_ptr<ProxySession>> Start(
      const lazaret::egress::v1::AttachSessionRequest& request, const DialerFactory& dialers,
      Limits limits, const UpstreamTrust& trust);
  ~ProxySession();  // Stop()

  // Ends every connection (their sockets are shut down, their threads
  // joined), the channel and the log; wipes the secrets.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& id() const { return id_; }
  const std::string& ca_pem() const { return ca_->CaPem(); }
  const std::vector<std::string>& hosts() const { return hosts_; }
  RequestLog& log() { return log_; }
  lazaret::egress::v1::SessionSummary Summary() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  ProxySession(std::string id, Limits limits);
  void OnAccepted(uint64_t connection_id, uint16_t port, fs::UniqueFd fd) ABSL_LOCKS_EXCLUDED(mu_);
  void Serve(uint16_t port, fs::UniqueFd fd, int token);

  const std::string id_;
  const Limits limits_;
  std::vector<std::string> hosts_;
  std::vector<std::string> secret_names_;
  std::unique_ptr<RequestGuard> guard_;
  std::unique_ptr<SessionCa> ca_;
  UpstreamTrust trust_;
  std::unique_ptr<egress::EgressChannel> channel_;
  std::unique_ptr<UpstreamDialer> dialer_;
  RequestLog log_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool router_connected_ ABSL_GUARDED_BY(mu_) = false;
  // Each live connection's socket, kept open here (the serving thread has
  // a duplicate) so Stop can shut it down without racing a close.
  std::map<int, fs::UniqueFd> live_ ABSL_GUARDED_BY(mu_);
  int next_token_ ABSL_GUARDED_BY(mu_) = 0;
};

class SessionTable {
 public:
  struct Options {
    std::string runtime_dir;  // where netpolicyd's socket is
    // Empty: NetPolicyDialer on runtime_dir's netpolicyd socket.
    DialerFactory dialers;
    ProxySession::Limits limits;
    UpstreamTrust trust;  // empty: the host's default store
    size_t max_sessions = 256;
    // Where each session's request log is kept after it ends (0700);
    // empty: nowhere (memory only). The 100 most recent are kept.
    std::string log_dir;
  };
  explicit SessionTable(Options options);
  ~SessionTable();

  absl::StatusOr<std::shared_ptr<ProxySession>> Attach(
      const lazaret::egress::v1::AttachSessionRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Detach(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<ProxySession>> Find(const std::string& id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<ProxySession>> List() const ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& log_dir() const { return options_.log_dir; }
  void StopAll() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Options options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<ProxySession>> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_SESSIONS_H_
