// `lazaret trust`: the review of one workspace lazaret.toml and the record
// of its digest in the user's trust store. Runs in the user's terminal, as
// the user; writes the trust store itself, through the same lazaret_config
// code the service reads it with. A workspace file is agent-written: it is
// read once, lazaret-configd checks exactly those bytes, they are printed
// escaped (terminal_text.h), and their digest is recorded only after a
// confirmation on /dev/tty or a matching --sha256, and only while the file
// still holds them.
#ifndef LAZARET_CLIENTS_LAZARET_CONFIG_TRUST_REVIEW_H_
#define LAZARET_CLIENTS_LAZARET_CONFIG_TRUST_REVIEW_H_

#include <string>

#include "absl/status/statusor.h"
#include "clients/lazaret/config/configd_client.h"
#include "services/configd/trust_store.h"

namespace lazaret::cli::config {

// Asks on the controlling terminal (not stdin/stdout, which a script may
// have redirected) whether to trust the content with `digest`. Only "y" or
// "yes" is a yes.
absl::StatusOr<bool> ConfirmOnTerminal(const std::string& digest);

// `lazaret trust --revoke`: `canonical_file` may again only narrow.
// Returns the exit code.
int RevokeTrust(::lazaret::config::TrustStore& store, const std::string& canonical_file);

// `lazaret trust`: shows what the content of `canonical_file` widens and its
// sha256, then asks on the terminal - or, with `expected_sha256`, requires
// that digest - and records it. Returns the exit code: 0 when trusted or
// when the content needs no trust, kExitNotRunning without configd, else 1.
int ReviewAndTrust(ConfigdClient& configd, ::lazaret::config::TrustStore& store,
                   const std::string& canonical_file, const std::string& expected_sha256);

}  // namespace lazaret::cli::config

#endif  // LAZARET_CLIENTS_LAZARET_CONFIG_TRUST_REVIEW_H_
