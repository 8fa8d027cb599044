#include "services/common/openssl_util.h"

#include <openssl/err.h>
#include <openssl/pem.h>

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

}  // namespace lazaret
