#include "services/brokerd/tls/session_identity.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "services/common/session_id.h"
#include "services/vocab/profile_name.h"

namespace lazaret::brokerd::tls {
bool IsValidCertificateProfileName(absl::string_view profile) {
  return vocab::IsValidProfileName(profile);
}

absl::Status ValidateSessionIdentity(const SessionIdentity& identity) {
  if (!IsValidCertificateProfileName(identity.profile)) {
    return absl::InvalidArgumentError(
        "profile name must match [a-z0-9_-]{2,32} (the configuration's rule) to be named in a "
        "certificate");
  }
  if (!IsValidSessionId(identity.session_id)) {
    return absl::InvalidArgumentError("session id must be 12 lowercase hex digits");
  }
  return absl::OkStatus();
}

std::string SessionUri(const SessionIdentity& identity) {
  return absl::StrCat(kSessionUriPrefix, identity.profile, ":", identity.session_id);
}

absl::StatusOr<SessionIdentity> ParseSessionUri(absl::string_view uri) {
  if (!absl::ConsumePrefix(&uri, kSessionUriPrefix)) {
    return absl::InvalidArgumentError("not a urn:lazaret:session: URI");
  }
  const size_t colon = uri.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError("session URI has no ':' between profile and session id");
  }
  SessionIdentity identity{std::string(uri.substr(0, colon)), std::string(uri.substr(colon + 1))};
  if (absl::Status s = ValidateSessionIdentity(identity); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("session URI: ", s.message()));
  }
  return identity;
}

}  // namespace lazaret::brokerd::tls
