#include "services/egressd/ca.h"

#include <openssl/asn1.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/status_util.h"
#include "services/vocab/domain_pattern.h"

namespace lazaret::egressd {
namespace {

constexpr size_t kMaxSessionIdLength = 64;

// The nameConstraints value permitting `intercepted`'s names.
absl::StatusOr<std::string> NameConstraints(const std::vector<std::string>& intercepted) {
  std::vector<std::string> permitted;
  for (const std::string& pattern : intercepted) {
    absl::StatusOr<std::string> canonical = vocab::CheckDomainPattern(pattern);
    if (!canonical.ok() || *canonical != pattern) {
      return absl::InvalidArgumentError(
          absl::StrCat("an intercepted host is not a canonical name or pattern: ",
                       canonical.ok() ? "not lower case" : canonical.status().message()));
    }
    // OpenSSL (and RFC 5280 practice): ".example.com" permits the names
    // below example.com only; "example.com" permits it and those below.
    // An exact name therefore also permits its subdomains; only the CA
    // issues leaves, and it mints them for intercepted names alone.
    permitted.push_back(absl::StrCat(
        "permitted;DNS:", pattern[0] == '*' ? pattern.substr(1) : pattern));
  }
  if (permitted.empty()) permitted.push_back("permitted;DNS:invalid");
  std::sort(permitted.begin(), permitted.end());
  permitted.erase(std::unique(permitted.begin(), permitted.end()), permitted.end());
  return absl::StrCat("critical,", absl::StrJoin(permitted, ","));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SessionCa>> SessionCa::Create(
    absl::string_view session_id, const std::vector<std::string>& intercepted) {
  if (session_id.empty() || session_id.size() > kMaxSessionIdLength ||
      !std::all_of(session_id.begin(), session_id.end(),
                   [](char c) { return c > ' ' && c < 0x7f; })) {
    return absl::InvalidArgumentError(
        "a session id for the egress CA is 1 to 64 printable ASCII characters without spaces");
  }
  LAZ_ASSIGN_OR_RETURN(std::string constraints, NameConstraints(intercepted));
  std::unique_ptr<SessionCa> ca(new SessionCa());
  const absl::Time now = absl::Now();
  ca->not_before_ = now - kCaBackdate;
  ca->not_after_ = now + kCaLifetime;
  LAZ_ASSIGN_OR_RETURN(ca->ca_key_, NewP256Key());
  LAZ_ASSIGN_OR_RETURN(
      ca->ca_cert_,
      BuildCertificate({.common_name = absl::StrCat("Lazaret session ", session_id, " egress CA"),
                        .subject_key = ca->ca_key_.get(),
                        .issuer_cert = nullptr,
                        .issuer_key = ca->ca_key_.get(),
                        .not_before = ca->not_before_,
                        .not_after = ca->not_after_,
                        .extensions = {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                                       {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                       {NID_subject_key_identifier, "hash"},
                                       {NID_name_constraints, constraints}}}));
  LAZ_ASSIGN_OR_RETURN(ca->ca_pem_, CertificateToPem(ca->ca_cert_.get()));
  return ca;
}

absl::StatusOr<std::shared_ptr<const LeafCert>> SessionCa::LeafFor(absl::string_view host) {
  absl::StatusOr<std::string> canonical = vocab::CheckDomainPattern(host);
  if (!canonical.ok() || *canonical != host || host[0] == '*') {
    return absl::InvalidArgumentError("a leaf is only made for a plain lower-case DNS name");
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = leaves_.find(host);
    if (it != leaves_.end()) return it->second;
  }
  auto leaf = std::make_shared<LeafCert>();
  LAZ_ASSIGN_OR_RETURN(leaf->key, NewP256Key());
  const absl::Time now = absl::Now();
  LAZ_ASSIGN_OR_RETURN(
      leaf->cert,
      BuildCertificate({.common_name = std::string(host),
                        .subject_key = leaf->key.get(),
                        .issuer_cert = ca_cert_.get(),
                        .issuer_key = ca_key_.get(),
                        .not_before = std::max(not_before_, now - kCaBackdate),
                        .not_after = not_after_,
                        .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                                       {NID_key_usage, "critical,digitalSignature"},
                                       {NID_ext_key_usage, "serverAuth"},
                                       {NID_subject_alt_name, absl::StrCat("DNS:", host)},
                                       {NID_subject_key_identifier, "hash"},
                                       {NID_authority_key_identifier, "keyid:always"}}}));
  absl::MutexLock lock(&mu_);
  if (leaves_.size() >= kMaxCachedLeaves) leaves_.clear();
  return leaves_.emplace(std::string(host), std::move(leaf)).first->second;
}

}  // namespace lazaret::egressd
