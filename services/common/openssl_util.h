// Owning pointers for OpenSSL objects, the OpenSSL error queue as a
// Status, and PEM of certificates and keys. Linked by lazaret-brokerd (its
// ephemeral CA and mTLS endpoints) and lazaret-egressd (the session CAs
// and TLS streams of the egress proxy), both host services without
// capabilities. Trusts nothing: it only wraps OpenSSL.
#ifndef LAZARET_SERVICES_COMMON_OPENSSL_UTIL_H_
#define LAZARET_SERVICES_COMMON_OPENSSL_UTIL_H_

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace lazaret {

template <auto Free>
struct OpenSslDeleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};

using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslDeleter<BN_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509_free>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpenSslDeleter<SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, OpenSslDeleter<SSL_free>>;
using SslSessionPtr = std::unique_ptr<SSL_SESSION, OpenSslDeleter<SSL_SESSION_free>>;

// `what` failed, with the reasons OpenSSL queued on this thread (the queue
// is emptied). The reasons are OpenSSL's own texts, the first four of the
// queue (never request data).
absl::Status OpenSslError(absl::string_view what);

// Drops whatever OpenSSL queued on this thread.
void ClearOpenSslErrors();

// PEM of a certificate or a private key (unencrypted PKCS#8).
absl::StatusOr<std::string> CertificateToPem(X509* cert);
absl::StatusOr<std::string> PrivateKeyToPem(EVP_PKEY* key);

// Parses one PEM certificate or private key.
absl::StatusOr<X509Ptr> CertificateFromPem(absl::string_view pem);
absl::StatusOr<PkeyPtr> PrivateKeyFromPem(absl::string_view pem);

// A fresh EC P-256 key.
absl::StatusOr<PkeyPtr> NewP256Key();

// An X.509 v3 certificate: a random positive 128-bit serial, the subject CN
// (none when empty), the issuer's name (the subject's own when
// self-signed), the validity, the subject key and the extensions (OpenSSL's
// configuration syntax per NID), signed with SHA-256 by `issuer_key`.
struct CertificateSpec {
  struct Extension {
    int nid;
    std::string value;
  };
  std::string common_name;
  EVP_PKEY* subject_key = nullptr;
  X509* issuer_cert = nullptr;  // nullptr: self-signed
  EVP_PKEY* issuer_key = nullptr;
  absl::Time not_before;
  absl::Time not_after;
  std::vector<Extension> extensions;
};
// `serial_hex`, when given, gets the serial as 32 lower-case hex digits.
absl::StatusOr<X509Ptr> BuildCertificate(const CertificateSpec& spec,
                                         std::string* serial_hex = nullptr);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_OPENSSL_UTIL_H_
