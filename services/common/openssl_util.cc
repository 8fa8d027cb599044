#include "services/common/openssl_util.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace lazaret {
namespace {

std::string BioContents(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  return len > 0 ? std::string(data, static_cast<size_t>(len)) : std::string();
}

BioPtr ReadOnlyBio(absl::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

}  // namespace

absl::Status OpenSslError(absl::string_view what) {
  std::string reasons;
  int n = 0;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    if (++n > 4) continue;  // keep the message short; drain the rest
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&reasons, reasons.empty() ? "" : "; ", buf);
  }
  if (reasons.empty()) return absl::InternalError(what);
  return absl::InternalError(absl::StrCat(what, ": ", reasons));
}

void ClearOpenSslErrors() { ERR_clear_error(); }

absl::StatusOr<std::string> CertificateToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return OpenSslError("encoding a certificate as PEM");
  }
  return BioContents(bio.get());
}

absl::StatusOr<std::string> PrivateKeyToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError("encoding a private key as PEM");
  }
  return BioContents(bio.get());
}

absl::StatusOr<X509Ptr> CertificateFromPem(absl::string_view pem) {
  if (pem.size() > (1 << 20)) return absl::InvalidArgumentError("certificate PEM too large");
  BioPtr bio = ReadOnlyBio(pem);
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (cert == nullptr) return OpenSslError("parsing a PEM certificate");
  return cert;
}

absl::StatusOr<PkeyPtr> PrivateKeyFromPem(absl::string_view pem) {
  if (pem.size() > (1 << 20)) return absl::InvalidArgumentError("private key PEM too large");
  BioPtr bio = ReadOnlyBio(pem);
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (key == nullptr) return OpenSslError("parsing a PEM private key");
  return key;
}

absl::StatusOr<PkeyPtr> NewP256Key() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslError("generating a P-256 key");
  return key;
}

absl::StatusOr<X509Ptr> BuildCertificate(const CertificateSpec& spec, std::string* serial_hex) {
  std::array<unsigned char, 16> serial{};
  do {
    if (RAND_bytes(serial.data(), static_cast<int>(serial.size())) != 1) {
      return OpenSslError("drawing a random serial");
    }
    serial[0] &= 0x7f;  // a positive INTEGER in 16 octets
  } while (std::all_of(serial.begin(), serial.end(), [](unsigned char b) { return b == 0; }));
  X509Ptr cert(X509_new());
  BignumPtr bn(BN_bin2bn(serial.data(), static_cast<int>(serial.size()), nullptr));
  if (cert == nullptr || bn == nullptr || X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return OpenSslError("building a certificate");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!spec.common_name.empty() &&
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(spec.common_name.c_str()),
                                 -1, -1, 0) != 1) {
    return OpenSslError("building a certificate");
  }
  if (X509_set_issuer_name(cert.get(), spec.issuer_cert != nullptr
                                           ? X509_get_subject_name(spec.issuer_cert)
                                           : name) != 1 ||
      ASN1_TIME_set(X509_getm_notBefore(cert.get()), absl::ToTimeT(spec.not_before)) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), absl::ToTimeT(spec.not_after)) == nullptr ||
      X509_set_pubkey(cert.get(), spec.subject_key) != 1) {
    return OpenSslError("building a certificate");
  }
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, spec.issuer_cert != nullptr ? spec.issuer_cert : cert.get(), cert.get(),
                 nullptr, nullptr, 0);
  for (const CertificateSpec::Extension& e : spec.extensions) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, e.nid, e.value.c_str());
    const bool added = ext != nullptr && X509_add_ext(cert.get(), ext, -1) == 1;
    X509_EXTENSION_free(ext);
    if (!added) return OpenSslError(absl::StrCat("adding the extension ", e.value));
  }
  if (X509_sign(cert.get(), spec.issuer_key, EVP_sha256()) <= 0) {
    return OpenSslError("signing a certificate");
  }
  if (serial_hex != nullptr) {
    *serial_hex = absl::BytesToHexString(
        absl::string_view(reinterpret_cast<const char*>(serial.data()), serial.size()));
  }
  return cert;
}

}  // namespace lazaret
