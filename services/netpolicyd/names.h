// Name patterns of the DNS policy: "api.example.com" matches that name only,
// "*.example.com" every name below example.com but not example.com itself.
// Case-insensitive; one trailing dot is ignored. Runs in lazaret-netpolicyd,
// unprivileged. Query names come from the sandbox: a name is matched only
// when every label is letters, digits, '-' or '_' (anything else, a '.' or
// a NUL inside a label included, matches no pattern).
#ifndef LAZARET_SERVICES_NETPOLICYD_NAMES_H_
#define LAZARET_SERVICES_NETPOLICYD_NAMES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::netpolicyd {

// Checks a pattern from configuration or `lazaret net allow|deny` and
// returns it lowercase without the trailing dot. Refused: empty labels,
// labels over 63 octets, names over 253, characters outside [a-z0-9-_], a
// '*' anywhere but as the whole first label, "*" alone.
absl::StatusOr<std::string> NormalizePattern(absl::string_view pattern);

// Lowercase dotted text of `labels` when every label is plain (see above);
// empty when not (an empty result also for the root name).
std::string PlainName(const std::vector<std::string>& labels);

// `pattern` as NormalizePattern returns it; `name` as PlainName returns it
// (both compared case-insensitively, a trailing dot ignored).
bool NameMatches(absl::string_view pattern, absl::string_view name);

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_NAMES_H_
