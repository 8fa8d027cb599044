// The identity checks on a client certificate that OpenSSL's chain
// verification does not make: the SAN URI must name this socket's session
// and profile, and the serial must be one the session's endpoint holds
// live. Runs in lazaret-brokerd (host, no capabilities), on a certificate
// the peer sent: untrusted, even after its chain verified (another
// session's certificate verifies too).
#ifndef LAZARET_SERVICES_BROKERD_TLS_PEER_CHECK_H_
#define LAZARET_SERVICES_BROKERD_TLS_PEER_CHECK_H_

#include <openssl/x509.h>

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/brokerd/tls/session_identity.h"

namespace lazaret::brokerd::tls {

// Whether `serial_hex` (CertificateSerialHex) is a serial the session's
// endpoint issued and has not forgotten. Called on the accepting thread.
using SerialIsLive = std::function<bool(const std::string& serial_hex)>;

// What one session's socket accepts.
struct ExpectedPeer {
  SessionIdentity identity;
  SerialIsLive serial_is_live;
};

// A certificate that passed every check.
struct VerifiedPeer {
  SessionIdentity identity;
  std::string serial_hex;
  int64_t not_after_unix = 0;
};

// Checks, in this order, a certificate whose chain OpenSSL verified:
// within its validity period at `now`; exactly one subjectAltName
// extension with exactly one entry, a URI that ParseSessionUri accepts;
// that URI's profile and session are `expected`'s; the serial is live.
// Each refusal's message names the check that failed.
absl::StatusOr<VerifiedPeer> CheckPeerCertificate(X509* cert, const ExpectedPeer& expected,
                                                  absl::Time now);

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_PEER_CHECK_H_
