#include "services/brokerd/tls/acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd::tls {
namespace {

absl::Status Refused(absl::StatusCode code, absl::string_view why) {
  return absl::Status(code, absl::StrCat("connection refused: ", why));
}

// Why a handshake failed, with OpenSSL's verification verdict when the
// certificate was what it refused.
absl::Status HandshakeFailure(SSL* ssl, absl::string_view what) {
  const long verdict = SSL_get_verify_result(ssl);
  if (verdict != X509_V_OK) {
    ERR_clear_error();
    return Refused(absl::StatusCode::kPermissionDenied,
                   absl::StrCat("client certificate failed verification: ",
                                X509_verify_cert_error_string(verdict)));
  }
  absl::Status s = OpenSslError(what);
  return Refused(absl::StatusCode::kPermissionDenied, s.message());
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsAcceptor>> TlsAcceptor::Create(const CertificateAuthority& ca) {
  LAZ_ASSIGN_OR_RETURN(SslCtxPtr ctx, ca.NewServerContext());
  return std::unique_ptr<TlsAcceptor>(new TlsAcceptor(std::move(ctx)));
}

absl::StatusOr<fs::UniqueFd> TlsAcceptor::AcceptConnection(int listen_fd) {
  int fd;
  do {
    fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      return absl::UnavailableError("no connection pending");
    }
    return ErrnoStatus("accepting a connection", err);
  }
  return fs::UniqueFd(fd);
}

absl::StatusOr<std::unique_ptr<TlsStream>> TlsAcceptor::Accept(int listen_fd,
                                                               const ExpectedPeer& expected) const {
  LAZ_ASSIGN_OR_RETURN(fs::UniqueFd conn, AcceptConnection(listen_fd));
  return Establish(std::move(conn), expected, absl::Now() + kHandshakeTimeout);
}

absl::Status TlsAcceptor::Handshake(SSL* ssl, int fd, absl::Time deadline) const {
  for (;;) {
    ERR_clear_error();
    const int r = SSL_accept(ssl);
    if (r == 1) return absl::OkStatus();
    const int err = SSL_get_error(ssl, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      absl::Status waited =
          WaitForFd(fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, "TLS handshake");
      if (!waited.ok()) {
        return Refused(absl::StatusCode::kDeadlineExceeded,
                       absl::StrCat("no complete TLS handshake within ",
                                    absl::FormatDuration(kHandshakeTimeout)));
      }
      continue;
    }
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
      return Refused(absl::StatusCode::kUnavailable,
                     "the peer closed the connection during the TLS handshake");
    }
    return HandshakeFailure(ssl, "TLS handshake failed");
  }
}

absl::StatusOr<std::unique_ptr<TlsStream>> TlsAcceptor::Establish(fs::UniqueFd conn,
                                                                  const ExpectedPeer& expected,
                                                                  absl::Time deadline) const {
  // 1. The socket's peer: the sidecar's escalation relay, which runs as the
  // broker's euid (the sidecar's root: uid 0 rootful, the user rootless).
  ucred cred{};
  socklen_t cred_len = sizeof(cred);
  if (getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) {
    return ErrnoStatus("connection refused: reading SO_PEERCRED", errno);
  }
  if (cred.uid != geteuid()) {
    return Refused(absl::StatusCode::kPermissionDenied,
                   absl::StrCat("peer uid ", cred.uid, " is not the broker's uid ", geteuid(),
                                " (SO_PEERCRED)"));
  }
  const int flags = fcntl(conn.get(), F_GETFL);
  if (flags < 0 || fcntl(conn.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoStatus("making the connection non-blocking", errno);
  }

  // 2. The handshake; OpenSSL verifies the chain against our CA.
  auto counter = std::make_unique<RecordCounter>();
  SslPtr ssl(SSL_new(ctx_.get()));
  if (ssl == nullptr || SSL_set_fd(ssl.get(), conn.get()) != 1) {
    return OpenSslError("creating a TLS connection");
  }
  CountApplicationRecords(ssl.get(), counter.get());
  auto refuse = [&](absl::Status s) {
    early_records_.fetch_add(counter->application_records.load());
    return s;
  };
  if (absl::Status s = Handshake(ssl.get(), conn.get(), deadline); !s.ok()) return refuse(s);
  if (SSL_version(ssl.get()) != TLS1_3_VERSION || SSL_session_reused(ssl.get()) != 0) {
    return refuse(Refused(absl::StatusCode::kPermissionDenied, "not a fresh TLS 1.3 session"));
  }
  if (SSL_get_verify_result(ssl.get()) != X509_V_OK) {
    return refuse(HandshakeFailure(ssl.get(), "verifying the client certificate"));
  }

  // 3. Which session the certificate speaks for, and whether it still may.
  absl::StatusOr<VerifiedPeer> peer =
      CheckPeerCertificate(SSL_get0_peer_certificate(ssl.get()), expected, absl::Now());
  if (!peer.ok()) {
    return refuse(Refused(absl::StatusCode::kPermissionDenied, peer.status().message()));
  }
  if (counter->application_records.load() != 0) {
    return refuse(absl::InternalError("application data was read before the preflight ended"));
  }
  return std::unique_ptr<TlsStream>(new TlsStream(
      std::move(ssl), std::move(conn), std::move(counter), *std::move(peer), cred.pid, deadline));
}

}  // namespace lazaret::brokerd::tls
