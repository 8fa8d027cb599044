// Who a client certificate speaks for: a profile and a session, written as
// the SAN URI urn:lazaret:session:<profile>:<session_id>. Runs in
// lazaret-brokerd (host, no capabilities). The text parsed here comes from
// a peer's certificate and is untrusted: the parser is strict and accepts
// exactly what SessionUri() writes.
#ifndef LAZARET_SERVICES_BROKERD_TLS_SESSION_IDENTITY_H_
#define LAZARET_SERVICES_BROKERD_TLS_SESSION_IDENTITY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::brokerd::tls {

struct SessionIdentity {
  std::string profile;
  std::string session_id;

  friend bool operator==(const SessionIdentity&, const SessionIdentity&) = default;
};

inline constexpr absl::string_view kSessionUriPrefix = "urn:lazaret:session:";
// The SAN URI of the broker's own server certificate.
inline constexpr absl::string_view kBrokerUri = "urn:lazaret:broker";

// The configuration's profile-name rule (vocab::IsValidProfileName,
// [a-z0-9_-]{2,32}): every profile configd resolves can get a certificate.
bool IsValidCertificateProfileName(absl::string_view profile);

// OK when the profile name is valid and the session id is IsValidSessionId.
absl::Status ValidateSessionIdentity(const SessionIdentity& identity);

// urn:lazaret:session:<profile>:<session_id> of a valid identity.
std::string SessionUri(const SessionIdentity& identity);

// The inverse of SessionUri: exactly the prefix, a valid profile, one ':'
// and a valid session id; anything else (case, spaces, a trailing byte, a
// NUL) is refused.
absl::StatusOr<SessionIdentity> ParseSessionUri(absl::string_view uri);

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_SESSION_IDENTITY_H_
