// One session's escalation endpoint on the host: the directory
// <socket_dir>/<id>/ holding only escalate.sock (bound read-only at
// /run/lazaret/broker in the session's network sidecar, whose relay is the
// sandbox's only way to it; never bound into the sandbox), the directory <certs_root>/<id>/ on
// a memory filesystem holding ca.pem, client.pem and client.key (bound
// read-only at /run/lazaret/certs), and the serials its socket accepts.
// Runs in lazaret-brokerd (host, the user's uid rootless or root rootful,
// no capabilities). Its inputs - the directories, the session id and the
// profile - come from the broker's configuration and the supervisor's
// registry, are validated again here, and every path is reached through a
// checked directory descriptor; the sandbox can only read the certificate
// directory, and reach the socket only through the sidecar's relay.
#ifndef LAZARET_SERVICES_BROKERD_TLS_ENDPOINT_H_
#define LAZARET_SERVICES_BROKERD_TLS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/brokerd/tls/acceptor.h"
#include "services/brokerd/tls/ca.h"
#include "services/brokerd/tls/live_serials.h"
#include "services/brokerd/tls/peer_check.h"
#include "services/brokerd/tls/session_identity.h"
#include "services/common/fs/fd.h"
#include "services/common/service_catalog.h"

namespace lazaret::brokerd::tls {

// The endpoint's socket in the session's socket directory, as the service
// catalog names it.
inline constexpr const auto& kSocketName = kEscalationSocketName;
inline constexpr char kCaFile[] = "ca.pem";
inline constexpr char kClientCertFile[] = "client.pem";
inline constexpr char kClientKeyFile[] = "client.key";
// How long a replaced certificate's serial stays live after a renewal.
inline constexpr absl::Duration kRenewalOverlap = absl::Seconds(60);
// The listen backlog: the broker allows 64 connections per session.
inline constexpr int kListenBacklog = 64;

struct EndpointOptions {
  absl::Duration renewal_overlap = kRenewalOverlap;
};

// Thread-safe, except that Close (and the destructor) must not run while
// another thread is in Accept: call StopAccepting, join that thread, then
// Close.
class SessionEndpoint {
 public:
  // `socket_dir` (the configured [escalation] socket_dir) and `certs_root`
  // (the broker's CertsRoot, private_dir.h) are opened with OpenPrivateRoot
  // (certs_root must be on tmpfs or ramfs); the session's directories are
  // made below them with CreateSessionDir (`adopt_existing`: a restarted
  // broker taking a live session back). A client certificate for
  // `identity` valid for `cert_lifetime` is issued by `ca`, which must
  // outlive the endpoint; then escalate.sock is bound (0600) and listens.
  static absl::StatusOr<std::unique_ptr<SessionEndpoint>> Create(
      const std::string& socket_dir, const std::string& certs_root, SessionIdentity identity,
      const CertificateAuthority& ca, absl::Duration cert_lifetime, bool adopt_existing,
      EndpointOptions options = {});

  ~SessionEndpoint();
  SessionEndpoint(const SessionEndpoint&) = delete;
  SessionEndpoint& operator=(const SessionEndpoint&) = delete;

  // Issues a new certificate for the session's key and replaces client.pem
  // atomically (a read-only bind mount sees the new file); the old serial
  // stays live for the renewal overlap, then is forgotten.
  absl::Status Renew() ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes a thread blocked in Accept (it returns an error) and makes every
  // later Accept fail.
  void StopAccepting();
  // Closes the listener, removes the socket, both session directories and
  // the certificate files, and forgets every serial. Idempotent.
  absl::Status Close() ABSL_LOCKS_EXCLUDED(mu_);

  // One preflighted connection (TlsAcceptor::Accept for this session).
  absl::StatusOr<std::unique_ptr<TlsStream>> Accept(const TlsAcceptor& acceptor) const;
  // What this socket accepts: its identity, and its live serials.
  ExpectedPeer expected_peer() const;
  bool IsLiveSerial(const std::string& serial_hex) const;

  const SessionIdentity& identity() const { return identity_; }
  // <socket_dir>/<id> and <certs_root>/<id>.
  const std::string& socket_dir() const { return socket_dir_; }
  const std::string& certs_dir() const { return certs_dir_; }
  int listen_fd() const { return listen_fd_.get(); }
  absl::Time not_after() const ABSL_LOCKS_EXCLUDED(mu_);
  // Half-way through the current certificate's life: when to Renew.
  absl::Time renew_at() const ABSL_LOCKS_EXCLUDED(mu_);
  std::string current_serial() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  SessionEndpoint(SessionIdentity identity, const CertificateAuthority& ca,
                  absl::Duration cert_lifetime, EndpointOptions options)
      : identity_(std::move(identity)), ca_(ca), cert_lifetime_(cert_lifetime), options_(options) {}
  absl::Status Bind();

  const SessionIdentity identity_;
  const CertificateAuthority& ca_;
  const absl::Duration cert_lifetime_;
  const EndpointOptions options_;
  std::string socket_dir_;
  std::string certs_dir_;
  fs::DirFd socket_root_;
  fs::DirFd certs_root_;
  fs::DirFd socket_session_dir_;
  fs::DirFd certs_session_dir_;
  fs::UniqueFd listen_fd_;
  LiveSerials serials_;

  mutable absl::Mutex mu_;
  IssuedCertificate current_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_ENDPOINT_H_
