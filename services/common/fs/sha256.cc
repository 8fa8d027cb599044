#include "services/common/fs/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace lazaret::fs {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(absl::string_view data) { EVP_DigestUpdate(ctx_, data.data(), data.size()); }

void Sha256::UpdateField(absl::string_view data) {
  Update(absl::StrCat(data.size(), ":"));
  Update(data);
}

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, md, &n);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(md), static_cast<size_t>(n)));
}

}  // namespace lazaret::fs
