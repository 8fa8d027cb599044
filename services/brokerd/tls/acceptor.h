// The broker's side of a sandbox's connection: accept it and run the whole
// preflight before one application byte is read. Runs in lazaret-brokerd
// (host, the user's uid rootless or root rootful, no capabilities). The
// peer is the sandbox - hostile - reached through the escalation relay in
// the session's network sidecar, which passes bytes unread, so the socket's
// peer credentials are the relay's (the sidecar's root: uid 0 rootful, the
// user's uid rootless - the broker's euid either way) and only the
// certificate tells sessions apart.
//
// Order of the checks, each refusal naming the one that failed:
//  1. SO_PEERCRED uid == geteuid();
//  2. TLS 1.3 handshake within the deadline, the client certificate
//     verified by OpenSSL against the broker's CA alone (chain, signature,
//     validity, EKU clientAuth) - no resumption, no tickets, no early data;
//  3. CheckPeerCertificate: validity again, the SAN URI names this socket's
//     profile and session, the serial is live.
// A refused connection is closed without SSL_read ever being called on it.
#ifndef LAZARET_SERVICES_BROKERD_TLS_ACCEPTOR_H_
#define LAZARET_SERVICES_BROKERD_TLS_ACCEPTOR_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/brokerd/tls/ca.h"
#include "services/common/openssl_util.h"
#include "services/brokerd/tls/peer_check.h"
#include "services/brokerd/tls/tls_stream.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd::tls {

// Handshake and request must both arrive within this (the stream's first
// deadline).
inline constexpr absl::Duration kHandshakeTimeout = absl::Seconds(10);

// Thread-safe: one acceptor serves every session's sockets.
class TlsAcceptor {
 public:
  // Builds the server context from `ca` (CertificateAuthority::NewServerContext).
  static absl::StatusOr<std::unique_ptr<TlsAcceptor>> Create(const CertificateAuthority& ca);

  // accept4 of one connection on `listen_fd` (CLOEXEC, non-blocking),
  // nothing else: blocks if `listen_fd` is a blocking socket; a
  // non-blocking one with nothing pending is Unavailable.
  static absl::StatusOr<fs::UniqueFd> AcceptConnection(int listen_fd);

  // AcceptConnection, then Establish with a deadline kHandshakeTimeout from
  // now, on the calling thread: a broker serving several clients at once
  // calls AcceptConnection itself and runs Establish per connection
  // elsewhere.
  absl::StatusOr<std::unique_ptr<TlsStream>> Accept(int listen_fd,
                                                    const ExpectedPeer& expected) const;

  // The preflight on an accepted connection (made non-blocking here). The
  // returned stream's deadline is `deadline`.
  absl::StatusOr<std::unique_ptr<TlsStream>> Establish(fs::UniqueFd conn,
                                                       const ExpectedPeer& expected,
                                                       absl::Time deadline) const;

  // Application-data records decrypted on connections before their
  // preflight ended (refused ones included). Zero by construction; tests
  // check it.
  uint64_t records_read_before_preflight() const { return early_records_.load(); }

 private:
  explicit TlsAcceptor(SslCtxPtr ctx) : ctx_(std::move(ctx)) {}
  absl::Status Handshake(SSL* ssl, int fd, absl::Time deadline) const;

  SslCtxPtr ctx_;
  mutable std::atomic<uint64_t> early_records_{0};
};

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_ACCEPTOR_H_
