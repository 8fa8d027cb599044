// HTTP rules of a profile (profiles.<name>.http."<host>"): the syntax of an
// entry "METHOD /path-prefix", the one matching rule of a request against
// a host's entries, which rule decides for a host, and the coverage
// relation the workspace clamp uses. Also the syntax of the header a
// secret is injected into. Part of lazaret_vocab: runs anywhere
// (lazaret-configd checks the configuration with it; the egress proxy
// decides requests with the same functions). Input is untrusted:
// configuration text the agent may have written, requests from the
// sandbox.
#ifndef LAZARET_SERVICES_VOCAB_HTTP_RULE_H_
#define LAZARET_SERVICES_VOCAB_HTTP_RULE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

// Entries one host's rule may list.
inline constexpr size_t kMaxHttpAllowEntries = 64;

// One allowed (method, path prefix) pair.
struct HttpAllow {
  std::string method;       // an RFC 9110 token in upper case, or "*" (any)
  std::string path_prefix;  // CheckHttpPathPrefix holds

  bool operator==(const HttpAllow& o) const {
    return method == o.method && path_prefix == o.path_prefix;
  }
};

// The entries of one host: exact ("api.example.com") or wildcard
// ("*.example.com"), canonical (CheckDomainPattern).
struct HttpRule {
  std::string host;
  std::vector<HttpAllow> allow;
};

// True for an RFC 9110 token: 1 or more of the visible ASCII characters
// other than the separators "(),/:;<=>?@[\]{} and the double quote.
bool IsHttpToken(absl::string_view s);

// A method as configured: an upper-case token ("GET", "PROPFIND") or "*".
// The error says why, for a lower-case method with the upper-case form.
absl::Status CheckHttpMethod(absl::string_view method);

// A path prefix as configured: starts with "/", printable ASCII without
// spaces, '?' or '#', no "//" and no "." or ".." segment ("/v1/./x",
// "/a/..", "/."), so the prefix means the same path to every server.
absl::Status CheckHttpPathPrefix(absl::string_view prefix);

// "METHOD /path-prefix", exactly one space between them.
absl::StatusOr<HttpAllow> ParseHttpAllow(absl::string_view text);

// The header a secret is injected into ("header:NAME"): an RFC 9110 token,
// returned lower case. Refused: the headers that frame or route the
// request (host, content-length, transfer-encoding, connection) and HTTP/2
// pseudo-headers (":authority").
absl::StatusOr<std::string> CheckInjectHeaderName(absl::string_view name);

// Whether `prefix` admits the request path `path` (which may carry a
// query): the path equals the prefix, or starts with it and either the
// prefix ends with "/" or the next character of the path is "/" or "?".
// So "/v1/messages" admits "/v1/messages", "/v1/messages/1" and
// "/v1/messages?beta=1", not "/v1/messagesX". A path whose part before
// '?' has a "." or ".." segment (also written "%2e") is admitted by no
// prefix: the server would resolve it to another path.
bool PathPrefixAdmits(absl::string_view prefix, absl::string_view path);

// Whether `entry` admits a request: the method is equal (case-sensitive) or
// the entry's is "*", and PathPrefixAdmits.
bool HttpAllowAdmits(const HttpAllow& entry, absl::string_view method, absl::string_view path);

// Whether every request `narrow` admits is admitted by `wide`: the same
// method or wide's "*", and wide's prefix admits narrow's prefix.
bool HttpAllowCovers(const HttpAllow& wide, const HttpAllow& narrow);

// The rule that decides for `host` (a name or a pattern): the rule for that
// exact name, else the most specific wildcard rule covering it
// (DomainCovers: "*.b.a.com" before "*.a.com"); null when none does.
const HttpRule* DecidingHttpRule(const std::vector<HttpRule>& rules, absl::string_view host);

// Whether a request to `host` is allowed: true when no rule decides for
// the host (no HTTP rule: everything passes), else when one entry of the
// deciding rule admits it.
bool HttpRequestAllowed(const std::vector<HttpRule>& rules, absl::string_view host,
                        absl::string_view method, absl::string_view path);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_HTTP_RULE_H_
