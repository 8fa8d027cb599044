// SHA-256 through OpenSSL's EVP interface, for every process that hashes
// content it identifies something by (image inputs, git directory
// fingerprints). Trusts nothing it hashes; the digest is only compared.
#ifndef LAZARET_SERVICES_COMMON_FS_SHA256_H_
#define LAZARET_SERVICES_COMMON_FS_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

struct evp_md_ctx_st;

namespace lazaret::fs {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(absl::string_view data);
  // `data` preceded by its length, so that the boundaries between fields
  // cannot be shifted to make two different field lists hash alike.
  void UpdateField(absl::string_view data);
  // Lowercase hex of the digest of everything so far; ends the hash.
  std::string HexDigest();

 private:
  evp_md_ctx_st* ctx_;
};

}  // namespace lazaret::fs

#endif  // LAZARET_SERVICES_COMMON_FS_SHA256_H_
