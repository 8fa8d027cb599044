// The record of workspace files the user has trusted: `lazaret trust` writes
// it, lazaret-configd reads it. Part of lazaret_config, so both use this one
// implementation. The store lives in the user's state directory
// ($XDG_STATE_HOME/lazaret, which no volume may expose); an entry is the
// sha256 of one file's exact bytes plus that file's canonical path, so any
// edit - one byte - or a copy elsewhere is untrusted again.
#ifndef LAZARET_SERVICES_CONFIGD_TRUST_STORE_H_
#define LAZARET_SERVICES_CONFIGD_TRUST_STORE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::config {

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

class TrustStore {
 public:
  // `path` is the store file (HostContext::TrustStoreFile()).
  explicit TrustStore(std::string path) : path_(std::move(path)) {}

  // True when (file, sha256) is recorded. A missing store trusts nothing. A
  // store that is not a regular file owned by the caller with no group or
  // other write access is an error (the caller treats it as trusting
  // nothing and says so).
  absl::StatusOr<bool> IsTrusted(const std::string& canonical_file,
                                 const std::string& sha256) const;

  // Records (file, sha256), replacing any earlier digest of the same file.
  // Creates the state directory (0700) and writes the store atomically (0600).
  absl::Status Trust(const std::string& canonical_file, const std::string& sha256);

  // Removes every entry of `file`. NotFound when there was none.
  absl::Status Revoke(const std::string& canonical_file);

  const std::string& path() const { return path_; }

 private:
  struct Entry {
    std::string sha256;
    std::string file;
  };
  absl::StatusOr<std::vector<Entry>> Read() const;
  absl::Status Write(const std::vector<Entry>& entries);

  std::string path_;
};

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_TRUST_STORE_H_
