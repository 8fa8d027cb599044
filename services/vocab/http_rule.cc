#include "services/vocab/http_rule.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/escape.h"

namespace lazaret::vocab {
namespace {

bool IsTChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u <= 0x20 || u >= 0x7f) return false;
  return absl::string_view("\"(),/:;<=>?@[\\]{}").find(c) == absl::string_view::npos;
}

// "." or "..", also percent-encoded ("%2e", ".%2E"): a server resolves such
// a segment, so the path it reaches is not the one the prefix was
// compared with ("/v1/messages/../admin" reaches "/admin").
bool IsDotSegment(absl::string_view segment) {
  std::string decoded;
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '%' && i + 2 < segment.size() && segment[i + 1] == '2' &&
        (segment[i + 2] == 'e' || segment[i + 2] == 'E')) {
      decoded.push_back('.');
      i += 2;
    } else {
      decoded.push_back(segment[i]);
    }
  }
  return decoded == "." || decoded == "..";
}

}  // namespace

bool IsHttpToken(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTChar);
}

absl::Status CheckHttpMethod(absl::string_view method) {
  if (method == "*") return absl::OkStatus();
  if (!IsHttpToken(method)) {
    return absl::InvalidArgumentError(
        absl::StrCat(QuotedForTerminal(method),
                     " is not an HTTP method (a token such as GET or POST, or * "
                     "for any method)"));
  }
  if (std::any_of(method.begin(), method.end(), absl::ascii_islower)) {
    // Methods are case-sensitive (RFC 9110 9.1): "get" would never match
    // the GET a client sends.
    return absl::InvalidArgumentError(absl::StrCat(
        QuotedForTerminal(method), " is not in upper case; methods are case-sensitive: write ",
        QuotedForTerminal(absl::AsciiStrToUpper(method))));
  }
  return absl::OkStatus();
}

absl::Status CheckHttpPathPrefix(absl::string_view prefix) {
  const std::string q = QuotedForTerminal(prefix);
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(q, " is not a path prefix: ", why));
  };
  if (!absl::StartsWith(prefix, "/")) return bad("it does not start with \"/\"");
  for (char c : prefix) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      return bad("only printable ASCII without spaces (percent-encode other characters)");
    }
    if (c == '?' || c == '#') {
      return bad("'?' and '#' start the query and the fragment, which a prefix does not match");
    }
  }
  // The segments between slashes; the last one may be empty ("/v1/").
  const std::vector<absl::string_view> segments = absl::StrSplit(prefix.substr(1), '/');
  for (size_t i = 0; i < segments.size(); ++i) {
    const absl::string_view s = segments[i];
    if (s.empty() && i + 1 < segments.size()) {
      return bad("it has an empty segment (\"//\"), which servers read differently");
    }
    if (IsDotSegment(s)) {
      return bad(absl::StrCat("it has a \"", s,
                              "\" segment: servers resolve it, so the prefix would not say "
                              "which path is reached"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HttpAllow> ParseHttpAllow(absl::string_view text) {
  const size_t space = text.find(' ');
  if (space == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(QuotedForTerminal(text),
                     " is not \"METHOD /path-prefix\" (e.g. \"GET /v1/models\" or \"* /\")"));
  }
  HttpAllow out{std::string(text.substr(0, space)), std::string(text.substr(space + 1))};
  if (absl::Status st = CheckHttpMethod(out.method); !st.ok()) return st;
  if (absl::Status st = CheckHttpPathPrefix(out.path_prefix); !st.ok()) return st;
  return out;
}

absl::StatusOr<std::string> CheckInjectHeaderName(absl::string_view name) {
  if (absl::StartsWith(name, ":")) {
    return absl::InvalidArgumentError(
        absl::StrCat(QuotedForTerminal(name),
                     " is an HTTP/2 pseudo-header: it is the request line, not a header"));
  }
  if (!IsHttpToken(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        QuotedForTerminal(name), " is not a header name (letters, digits and !#$%&'*+-.^_`|~)"));
  }
  std::string lower = absl::AsciiStrToLower(name);
  for (absl::string_view framing : {"host", "content-length", "transfer-encoding", "connection"}) {
    if (lower == framing) {
      return absl::InvalidArgumentError(absl::StrCat(
          QuotedForTerminal(name),
          " frames or routes the request: a value placed there would change where the request "
          "goes or where it ends, not authenticate it"));
    }
  }
  return lower;
}

bool PathPrefixAdmits(absl::string_view prefix, absl::string_view path) {
  if (!absl::StartsWith(path, prefix)) return false;
  const absl::string_view before_query = path.substr(0, path.find('?'));
  for (absl::string_view segment : absl::StrSplit(before_query, '/')) {
    if (IsDotSegment(segment)) return false;
  }
  if (path.size() == prefix.size() || absl::EndsWith(prefix, "/")) return true;
  const char next = path[prefix.size()];
  return next == '/' || next == '?';
}

bool HttpAllowAdmits(const HttpAllow& entry, absl::string_view method, absl::string_view path) {
  return (entry.method == "*" || entry.method == method) &&
         PathPrefixAdmits(entry.path_prefix, path);
}

bool HttpAllowCovers(const HttpAllow& wide, const HttpAllow& narrow) {
  // A prefix holds no '?', so narrow's prefix is admitted exactly when
  // every path it admits is.
  return (wide.method == "*" || wide.method == narrow.method) &&
         PathPrefixAdmits(wide.path_prefix, narrow.path_prefix);
}

const HttpRule* DecidingHttpRule(const std::vector<HttpRule>& rules, absl::string_view host) {
  std::string name = absl::AsciiStrToLower(host);
  if (absl::EndsWith(name, ".")) name.pop_back();
  const HttpRule* best = nullptr;
  for (const HttpRule& r : rules) {
    if (r.host == name) return &r;
    if (!DomainCovers(r.host, name)) continue;
    if (best == nullptr || r.host.size() > best->host.size()) best = &r;
  }
  return best;
}

bool HttpRequestAllowed(const std::vector<HttpRule>& rules, absl::string_view host,
                        absl::string_view method, absl::string_view path) {
  const HttpRule* rule = DecidingHttpRule(rules, host);
  if (rule == nullptr) return true;
  return std::any_of(rule->allow.begin(), rule->allow.end(),
                     [&](const HttpAllow& a) { return HttpAllowAdmits(a, method, path); });
}

}  // namespace lazaret::vocab
