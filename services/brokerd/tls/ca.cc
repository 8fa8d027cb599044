#include "services/brokerd/tls/ca.h"

#include <openssl/asn1.h>
#include <openssl/ec.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "services/brokerd/tls/tls_context.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd::tls {
namespace {

// The CA and the server certificate live as long as the broker process,
// which holds the only copy of the CA key; their validity period is not
// what bounds them, so it is long enough never to run out under a broker.
constexpr absl::Duration kCaLifetime = absl::Hours(24 * 3650);
constexpr size_t kSerialBytes = 16;

absl::Status CheckClientLifetime(absl::Duration lifetime) {
  if (lifetime <= absl::ZeroDuration() || lifetime > kMaxClientLifetime) {
    return absl::InvalidArgumentError(
        absl::StrCat("a client certificate's lifetime must be above 0 and at most ",
                     absl::FormatDuration(kMaxClientLifetime)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> CertificateSerialHex(const X509* cert) {
  const ASN1_INTEGER* serial = X509_get0_serialNumber(cert);
  BignumPtr bn(serial != nullptr ? ASN1_INTEGER_to_BN(serial, nullptr) : nullptr);
  if (bn == nullptr) return OpenSslError("reading a certificate's serial");
  std::array<unsigned char, kSerialBytes> bytes{};
  if (BN_is_negative(bn.get()) ||
      BN_bn2binpad(bn.get(), bytes.data(), static_cast<int>(bytes.size())) < 0) {
    return absl::InvalidArgumentError("certificate serial is negative or longer than 128 bits");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

absl::StatusOr<std::unique_ptr<CertificateAuthority>> CertificateAuthority::Create() {
  std::unique_ptr<CertificateAuthority> ca(new CertificateAuthority());
  const absl::Time now = absl::Now();
  std::string serial;
  LAZ_ASSIGN_OR_RETURN(ca->ca_key_, NewP256Key());
  LAZ_ASSIGN_OR_RETURN(
      ca->ca_cert_,
      BuildCertificate({.common_name = kCaCommonName,
                        .subject_key = ca->ca_key_.get(),
                        .issuer_cert = nullptr,
                        .issuer_key = ca->ca_key_.get(),
                        .not_before = now - kClockSkew,
                        .not_after = now + kCaLifetime,
                        .extensions = {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                                       {NID_key_usage, "critical,keyCertSign"},
                                       {NID_subject_key_identifier, "hash"}}},
                       &serial));
  LAZ_ASSIGN_OR_RETURN(ca->ca_pem_, CertificateToPem(ca->ca_cert_.get()));
  LAZ_ASSIGN_OR_RETURN(ca->server_key_, NewP256Key());
  LAZ_ASSIGN_OR_RETURN(
      ca->server_cert_,
      BuildCertificate({.common_name = "lazaret-brokerd",
                        .subject_key = ca->server_key_.get(),
                        .issuer_cert = ca->ca_cert_.get(),
                        .issuer_key = ca->ca_key_.get(),
                        .not_before = now - kClockSkew,
                        .not_after = now + kCaLifetime,
                        .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                                       {NID_key_usage, "critical,digitalSignature"},
                                       {NID_ext_key_usage, "serverAuth"},
                                       {NID_subject_alt_name, absl::StrCat("URI:", kBrokerUri)},
                                       {NID_subject_key_identifier, "hash"},
                                       {NID_authority_key_identifier, "keyid:always"}}},
                       &serial));
  LAZ_ASSIGN_OR_RETURN(ca->server_pem_, CertificateToPem(ca->server_cert_.get()));
  return ca;
}

absl::StatusOr<IssuedCertificate> CertificateAuthority::Issue(const SessionIdentity& identity,
                                                              absl::Time not_before,
                                                              absl::Time not_after,
                                                              PkeyPtr key) const {
  LAZ_RETURN_IF_ERROR(ValidateSessionIdentity(identity));
  IssuedCertificate issued;
  LAZ_ASSIGN_OR_RETURN(
      X509Ptr cert,
      BuildCertificate(
          {.common_name = absl::StrCat("lazaret session ", identity.session_id),
           .subject_key = key.get(),
           .issuer_cert = ca_cert_.get(),
           .issuer_key = ca_key_.get(),
           .not_before = not_before,
           .not_after = not_after,
           .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                          {NID_key_usage, "critical,digitalSignature"},
                          {NID_ext_key_usage, "clientAuth"},
                          {NID_subject_alt_name, absl::StrCat("URI:", SessionUri(identity))},
                          {NID_subject_key_identifier, "hash"},
                          {NID_authority_key_identifier, "keyid:always"}}},
          &issued.serial_hex));
  LAZ_ASSIGN_OR_RETURN(issued.cert_pem, CertificateToPem(cert.get()));
  LAZ_ASSIGN_OR_RETURN(issued.key_pem, PrivateKeyToPem(key.get()));
  issued.not_before_unix = absl::ToUnixSeconds(not_before);
  issued.not_after_unix = absl::ToUnixSeconds(not_after);
  return issued;
}

absl::StatusOr<IssuedCertificate> CertificateAuthority::IssueClient(const SessionIdentity& identity,
                                                                    absl::Duration lifetime) const {
  LAZ_RETURN_IF_ERROR(CheckClientLifetime(lifetime));
  LAZ_ASSIGN_OR_RETURN(PkeyPtr key, NewP256Key());
  const absl::Time now = absl::Now();
  return Issue(identity, now - kClockSkew, now + lifetime, std::move(key));
}

absl::StatusOr<IssuedCertificate> CertificateAuthority::RenewClient(
    const SessionIdentity& identity, absl::Duration lifetime, absl::string_view key_pem) const {
  LAZ_RETURN_IF_ERROR(CheckClientLifetime(lifetime));
  LAZ_ASSIGN_OR_RETURN(PkeyPtr key, PrivateKeyFromPem(key_pem));
  if (!EVP_PKEY_is_a(key.get(), "EC")) {
    return absl::InvalidArgumentError("a renewed client key must be the session's P-256 key");
  }
  const absl::Time now = absl::Now();
  return Issue(identity, now - kClockSkew, now + lifetime, std::move(key));
}

absl::StatusOr<IssuedCertificate> CertificateAuthority::IssueClientForTesting(
    const SessionIdentity& identity, absl::Time not_before, absl::Time not_after) const {
  LAZ_ASSIGN_OR_RETURN(PkeyPtr key, NewP256Key());
  return Issue(identity, not_before, not_after, std::move(key));
}

absl::StatusOr<SessionIdentity> CertificateAuthority::ParseSessionUri(absl::string_view uri) {
  return tls::ParseSessionUri(uri);
}

absl::StatusOr<SslCtxPtr> CertificateAuthority::NewServerContext() const {
  return tls::NewServerContext(ca_cert_.get(), server_cert_.get(), server_key_.get());
}

}  // namespace lazaret::brokerd::tls
