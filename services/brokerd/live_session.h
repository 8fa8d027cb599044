// One session's escalation channel while it lives: its endpoint (socket and
// certificates), the auto-approve entries resolved at its start, its guard,
// the thread that accepts its connections and one thread per connection,
// and the host commands it has running. Runs in lazaret-brokerd (the user,
// no capabilities). What it knows of the session (record, profile) comes
// from the supervisor and configd; everything arriving on its socket is the
// sandbox's and goes through request_flow.h.
#ifndef LAZARET_SERVICES_BROKERD_LIVE_SESSION_H_
#define LAZARET_SERVICES_BROKERD_LIVE_SESSION_H_

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "lazaret/broker/v1/broker.pb.h"
#include "services/brokerd/audit_log.h"
#include "services/brokerd/command/executor.h"
#include "services/brokerd/command/matcher.h"
#include "services/brokerd/pending.h"
#include "services/brokerd/session_guard.h"
#include "services/brokerd/session_lookup.h"
#include "services/brokerd/tls/acceptor.h"
#include "services/brokerd/tls/ca.h"
#include "services/brokerd/tls/endpoint.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd {

// What every session shares; owned by the broker, outlives every session.
struct BrokerParts {
  const tls::CertificateAuthority* ca = nullptr;
  const tls::TlsAcceptor* acceptor = nullptr;
  RequestBook* book = nullptr;
  AuditLog* audit = nullptr;
  std::string certs_root;  // the broker's tls::CertsRoot
  absl::Duration cert_lifetime = absl::Hours(1);
  GuardLimits guard;
};

class LiveSession {
 public:
  // Creates the endpoint (adopt_existing: a restarted broker taking back a
  // session whose directories it made before) and starts accepting.
  static absl::StatusOr<std::unique_ptr<LiveSession>> Start(SessionFacts facts,
                                                            const BrokerParts& parts,
                                                            bool adopt_existing);
  ~LiveSession();  // Stop()
  LiveSession(const LiveSession&) = delete;
  LiveSession& operator=(const LiveSession&) = delete;

  // Stops accepting, ends every running command of the session (SIGTERM,
  // grace, SIGKILL), resolves its pending requests, waits for its
  // connection threads, then removes the socket and the certificates.
  // Idempotent.
  void Stop();

  const SessionFacts& facts() const { return facts_; }
  const std::string& id() const { return facts_.record.id(); }
  broker::v1::Endpoint EndpointMessage() const;
  approver::v1::SessionEndpoint View() const;
  const std::vector<command::AutoApproveEntry>& entries() const { return entries_; }

  // For request_flow: a command of this session runs; it is cancelled when
  // the session stops. Register refuses once stopping (the command must
  // not start).
  bool Register(command::RunningCommand* running);
  void Unregister(command::RunningCommand* running);
  SessionGuard& guard() { return guard_; }
  const BrokerParts& parts() const { return parts_; }
  tls::SessionEndpoint& endpoint() { return *endpoint_; }

 private:
  LiveSession(SessionFacts facts, const BrokerParts& parts);
  void AcceptLoop();
  void Serve(fs::UniqueFd conn);

  const SessionFacts facts_;
  const BrokerParts parts_;
  std::unique_ptr<tls::SessionEndpoint> endpoint_;
  std::vector<command::AutoApproveEntry> entries_;
  SessionGuard guard_;
  fs::UniqueFd wake_;  // eventfd: Stop() wakes the accept loop
  std::thread accept_thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int serving_ ABSL_GUARDED_BY(mu_) = 0;  // connection threads alive
  std::set<command::RunningCommand*> running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_LIVE_SESSION_H_
