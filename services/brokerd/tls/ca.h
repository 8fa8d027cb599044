// The broker's ephemeral certificate authority. Runs in lazaret-brokerd
// (host, the user's uid rootless or root rootful, no capabilities). The CA
// key (ECDSA P-256) is made in memory when the broker starts and is never
// written anywhere; it dies with the process, so every certificate it
// issued dies with it too. It issues one server certificate for the broker
// itself and short-lived client certificates, one per session, naming the
// session in a SAN URI. Its inputs are the broker's own (a profile and a
// session id it looked up), validated again here before they reach a
// certificate.
#ifndef LAZARET_SERVICES_BROKERD_TLS_CA_H_
#define LAZARET_SERVICES_BROKERD_TLS_CA_H_

#include <openssl/x509.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/common/openssl_util.h"
#include "services/brokerd/tls/session_identity.h"

namespace lazaret::brokerd::tls {

struct IssuedCertificate {
  std::string cert_pem;
  std::string key_pem;     // unencrypted PKCS#8
  std::string serial_hex;  // 32 lowercase hex digits (128 bits)
  int64_t not_before_unix = 0;
  int64_t not_after_unix = 0;
};

inline constexpr char kCaCommonName[] = "Lazaret ephemeral CA";
// A client certificate is valid from this long before its issue, so that a
// clock a little behind (the sandbox shares the host's) still accepts it.
inline constexpr absl::Duration kClockSkew = absl::Seconds(60);
// The longest client certificate IssueClient makes.
inline constexpr absl::Duration kMaxClientLifetime = absl::Hours(24);

// The serial of `cert` as IssuedCertificate::serial_hex writes it; an error
// for a negative serial or one longer than 128 bits (never ours).
absl::StatusOr<std::string> CertificateSerialHex(const X509* cert);

class CertificateAuthority {
 public:
  // A fresh key, a self-signed CA certificate (CN "Lazaret ephemeral CA",
  // basicConstraints CA:TRUE critical, keyUsage keyCertSign critical) and
  // the broker's server certificate (SAN URI urn:lazaret:broker, EKU
  // serverAuth) issued by it.
  static absl::StatusOr<std::unique_ptr<CertificateAuthority>> Create();

  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;

  // The CA certificate, the clients' only trust anchor (ca.pem).
  std::string ca_pem() const { return ca_pem_; }
  // The broker's server certificate (PEM); its key never leaves this object.
  std::string server_pem() const { return server_pem_; }

  // A client certificate for `identity` with a fresh P-256 key: SAN URI
  // urn:lazaret:session:<profile>:<id>, EKU clientAuth, a random 128-bit
  // serial, valid from now - kClockSkew for `lifetime` from now
  // (0 < lifetime <= kMaxClientLifetime).
  absl::StatusOr<IssuedCertificate> IssueClient(const SessionIdentity& identity,
                                                absl::Duration lifetime) const;
  // IssueClient for the key of an earlier certificate of the same session
  // (`key_pem`), so that a renewal replaces client.pem alone and a reader
  // never sees a certificate beside a key that does not match it.
  absl::StatusOr<IssuedCertificate> RenewClient(const SessionIdentity& identity,
                                                absl::Duration lifetime,
                                                absl::string_view key_pem) const;
  // Tests only: a client certificate with any validity period (one in the
  // past included) and a fresh key.
  absl::StatusOr<IssuedCertificate> IssueClientForTesting(const SessionIdentity& identity,
                                                          absl::Time not_before,
                                                          absl::Time not_after) const;

  // The strict SAN URI parser (session_identity.h).
  static absl::StatusOr<SessionIdentity> ParseSessionUri(absl::string_view uri);

  // A server SSL_CTX: TLS 1.3 only, no tickets, no session cache, no
  // renegotiation, a client certificate required and verified against this
  // CA alone (no default verify paths), for the sslclient purpose (EKU
  // clientAuth); the broker's server certificate and key loaded.
  absl::StatusOr<SslCtxPtr> NewServerContext() const;

 private:
  CertificateAuthority() = default;
  absl::StatusOr<IssuedCertificate> Issue(const SessionIdentity& identity, absl::Time not_before,
                                          absl::Time not_after, PkeyPtr key) const;

  PkeyPtr ca_key_;
  X509Ptr ca_cert_;
  std::string ca_pem_;
  PkeyPtr server_key_;
  X509Ptr server_cert_;
  std::string server_pem_;
};

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_CA_H_
