#include "services/brokerd/tls/peer_check.h"

#include <openssl/asn1.h>
#include <openssl/x509v3.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "services/brokerd/tls/ca.h"
#include "services/common/openssl_util.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd::tls {
namespace {

struct GeneralNamesFree {
  void operator()(GENERAL_NAMES* names) const { GENERAL_NAMES_free(names); }
};

absl::Status Refuse(absl::string_view check) {
  return absl::PermissionDeniedError(absl::StrCat("client certificate refused: ", check));
}

absl::StatusOr<std::string> SessionUriOf(X509* cert) {
  int critical = 0;
  std::unique_ptr<GENERAL_NAMES, GeneralNamesFree> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, &critical, nullptr)));
  if (names == nullptr) {
    return Refuse(critical == -2 ? "more than one subjectAltName extension"
                                 : "no subjectAltName URI");
  }
  if (sk_GENERAL_NAME_num(names.get()) != 1) {
    return Refuse("the subjectAltName must hold exactly one entry, the session URI");
  }
  const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), 0);
  if (name->type != GEN_URI) return Refuse("the subjectAltName entry is not a URI");
  const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                     static_cast<size_t>(ASN1_STRING_length(uri)));
}

}  // namespace

absl::StatusOr<VerifiedPeer> CheckPeerCertificate(X509* cert, const ExpectedPeer& expected,
                                                  absl::Time now) {
  if (cert == nullptr) return Refuse("no client certificate");
  time_t t = absl::ToTimeT(now);
  if (X509_cmp_time(X509_get0_notBefore(cert), &t) >= 0) return Refuse("not yet valid");
  if (X509_cmp_time(X509_get0_notAfter(cert), &t) <= 0) return Refuse("expired");

  LAZ_ASSIGN_OR_RETURN(const std::string uri, SessionUriOf(cert));
  absl::StatusOr<SessionIdentity> named = ParseSessionUri(uri);
  if (!named.ok()) return Refuse(named.status().message());
  if (named->profile != expected.identity.profile) {
    return Refuse(absl::StrCat("it names profile '", named->profile, "', this socket is profile '",
                               expected.identity.profile, "'"));
  }
  if (named->session_id != expected.identity.session_id) {
    return Refuse(absl::StrCat("it names session ", named->session_id, ", this socket is session ",
                               expected.identity.session_id));
  }

  absl::StatusOr<std::string> serial = CertificateSerialHex(cert);
  if (!serial.ok()) return Refuse(serial.status().message());
  if (!expected.serial_is_live || !expected.serial_is_live(*serial)) {
    return Refuse(absl::StrCat("serial ", *serial, " is not live for session ",
                               expected.identity.session_id,
                               " (the certificate was replaced or its session ended)"));
  }
  int day = 0;
  int sec = 0;
  int64_t not_after = 0;
  ASN1_TIME* epoch = ASN1_TIME_set(nullptr, 0);
  if (epoch != nullptr && ASN1_TIME_diff(&day, &sec, epoch, X509_get0_notAfter(cert)) == 1) {
    not_after = int64_t{day} * 86400 + sec;
  }
  ASN1_TIME_free(epoch);
  return VerifiedPeer{*std::move(named), *std::move(serial), not_after};
}

}  // namespace lazaret::brokerd::tls
