// DNS names and name patterns: the strict syntax of allow_domains and
// `lazaret net allow|deny`, the wider syntax of the names a DNS query
// carries, and the one coverage relation (the workspace clamp in
// lazaret-configd, the DNS policy in lazaret-netpolicyd). Part of
// lazaret_vocab: runs anywhere. Input is untrusted: configuration text the
// agent may have written, query names from the sandbox.
#ifndef LAZARET_SERVICES_VOCAB_DOMAIN_PATTERN_H_
#define LAZARET_SERVICES_VOCAB_DOMAIN_PATTERN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

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

// The wider syntax of the patterns lazaret-netpolicyd compiles (they were
// checked by CheckDomainPattern where they were written; this is the
// service's own check of what reaches it): returns the pattern lowercase
// without one trailing dot. Each label is 1-63 letters, digits, '-' or
// '_' (a query may name an SRV or TXT owner), '*' only as the whole first
// label of a longer name; at most 253 characters.
absl::StatusOr<std::string> NormalizeDnsPattern(absl::string_view pattern);

// Lowercase dotted text of a query name's `labels` when every label is
// plain (1-63 letters, digits, '-' or '_': a '.' or a NUL inside a label
// would print as another name) and the name is at most 253 characters;
// empty otherwise, and for the root name.
std::string PlainName(const std::vector<std::string>& labels);

// True when `name` is a name as PlainName returns it: lowercase labels of
// [a-z0-9_-], 1-63 octets each, dot separated, no trailing dot, at most
// 253 octets (what lazaret-netpolicyd may send an approver).
bool IsPlainName(absl::string_view name);

// True when every name `name` (a name or a pattern) matches is matched by
// `pattern`: they are equal, or `pattern` is "*.<base>" and `name` lies
// below <base>. "*.a.com" covers "x.a.com" and "*.x.a.com", not "a.com".
// Case-insensitive, one trailing dot ignored; an empty name or pattern
// covers nothing.
bool DomainCovers(absl::string_view pattern, absl::string_view name);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_DOMAIN_PATTERN_H_
