// DNS names for allow_domains: strict syntax and the coverage relation the
// workspace clamp uses. Part of lazaret_config (runs in lazaret-configd and
// the loader fuzzer). Input is untrusted configuration text, possibly
// written by the agent.
#ifndef LAZARET_SERVICES_CONFIGD_DOMAIN_PATTERN_H_
#define LAZARET_SERVICES_CONFIGD_DOMAIN_PATTERN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::config {

// Longest pattern accepted, as for a DNS name in text form.
inline constexpr size_t kMaxDomainLength = 253;
inline constexpr size_t kMaxLabelLength = 63;

// An exact name ("api.example.com") or a wildcard ("*.example.com", which
// matches every name below example.com, not example.com itself). Returns
// the canonical form: ASCII lowercase, one trailing dot removed. Refused:
// empty labels, labels over 63 characters, a name over 253, characters
// other than letters, digits and '-' (so no '_': A/AAAA lookups are for
// host names, which never carry one; "_" labels name SRV/TXT records,
// which are not answered), a label starting or ending with '-', fewer than
// two labels (under the "*." too: "*.com" would open a whole top-level
// domain), a last label of digits only (an IPv4 address or no real name),
// '*' anywhere but as the whole first label, and non-ASCII text (write an
// internationalised name in its "xn--" form).
absl::StatusOr<std::string> CheckDomainPattern(absl::string_view text);

// True when every name `name` (canonical: a name or pattern) matches is
// matched by `pattern` (canonical): they are equal, or `pattern` is
// "*.<base>" and `name` lies below <base>. "*.a.com" covers "x.a.com" and
// "*.x.a.com", not "a.com".
bool DomainCovers(absl::string_view pattern, absl::string_view name);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_DOMAIN_PATTERN_H_
