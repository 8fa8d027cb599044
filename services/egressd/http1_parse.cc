#include "services/egressd/http1_parse.h"

#include <http_parser.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/escape.h"
#include "services/vocab/http_rule.h"

namespace lazaret::egressd {

// What a message's parse collected (http-parser callbacks' data). Outside
// the anonymous namespace: the parsers' State (declared in the header)
// holds one.
struct Http1Collected {
  std::string url;
  std::string status_text;
  std::vector<HeaderField> fields;
  bool in_value = false;
  bool headers_done = false;
  bool message_done = false;
  bool skip_body = false;  // a response to HEAD
  std::string* body = nullptr;
};

namespace {

Http1Collected* Of(http_parser* p) { return static_cast<Http1Collected*>(p->data); }

int OnUrl(http_parser* p, const char* at, size_t len) {
  Of(p)->url.append(at, len);
  return 0;
}
int OnStatus(http_parser* p, const char* at, size_t len) {
  Of(p)->status_text.append(at, len);
  return 0;
}
int OnHeaderField(http_parser* p, const char* at, size_t len) {
  Http1Collected* c = Of(p);
  if (c->headers_done) return 0;  // trailers: dropped
  if (c->fields.empty() || c->in_value) c->fields.emplace_back();
  c->in_value = false;
  c->fields.back().name.append(at, len);
  return 0;
}
int OnHeaderValue(http_parser* p, const char* at, size_t len) {
  Http1Collected* c = Of(p);
  if (c->headers_done) return 0;
  if (c->fields.empty()) c->fields.emplace_back();
  c->in_value = true;
  c->fields.back().value.append(at, len);
  return 0;
}
int OnHeadersComplete(http_parser* p) {
  Http1Collected* c = Of(p);
  c->headers_done = true;
  // A response to HEAD, a 1xx, 204 or 304 has no body whatever its
  // Content-Length says.
  const bool bodiless = p->type == HTTP_RESPONSE &&
                        (p->status_code < 200 || p->status_code == 204 || p->status_code == 304);
  return c->skip_body || bodiless ? 1 : 0;
}
int OnBody(http_parser* p, const char* at, size_t len) {
  Http1Collected* c = Of(p);
  if (c->body != nullptr) c->body->append(at, len);
  return 0;
}
int OnMessageComplete(http_parser* p) {
  Of(p)->message_done = true;
  http_parser_pause(p, 1);  // the next message is parsed by a new parser
  return 0;
}

const http_parser_settings& Settings() {
  static const http_parser_settings settings = [] {
    http_parser_settings s;
    http_parser_settings_init(&s);
    s.on_url = OnUrl;
    s.on_status = OnStatus;
    s.on_header_field = OnHeaderField;
    s.on_header_value = OnHeaderValue;
    s.on_headers_complete = OnHeadersComplete;
    s.on_body = OnBody;
    s.on_message_complete = OnMessageComplete;
    return s;
  }();
  return settings;
}

bool ParserOk(const http_parser& p) {
  const auto e = HTTP_PARSER_ERRNO(&p);
  return e == HPE_OK || e == HPE_PAUSED;
}

void TrimFields(std::vector<HeaderField>* fields) {
  for (HeaderField& f : *fields) {
    f.value = std::string(absl::StripAsciiWhitespace(f.value));
  }
}

}  // namespace

std::string QuoteRequestText(absl::string_view raw) {
  return vocab::EscapeForTerminalCut(raw, kMaxQuotedRequestText);
}

namespace {

// The host part of a Host field or authority: lower case, the port and
// one trailing dot removed; empty when it is not a plain DNS name (an IP
// literal, a user part, junk).
std::string HostOfAuthority(absl::string_view authority) {
  if (authority.empty() || authority.front() == '[') return {};
  const size_t colon = authority.rfind(':');
  if (colon != absl::string_view::npos) {
    absl::string_view port = authority.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return absl::ascii_isdigit(c); })) {
      return {};
    }
    authority = authority.substr(0, colon);
  }
  absl::StatusOr<std::string> name = vocab::CheckDomainPattern(authority);
  if (!name.ok() || name->empty() || (*name)[0] == '*') return {};
  return *name;
}

Http1Refusal MakeRefusal(int status, std::string reason) {
  return Http1Refusal{status, std::move(reason)};
}

}  // namespace

size_t ScanHttp1Head(absl::string_view buf, size_t max_bytes, size_t max_fields,
                     Http1Refusal* refusal) {
  size_t line_start = 0;
  size_t lines = 0;
  const size_t n = std::min(buf.size(), max_bytes);
  for (size_t i = 0; i < n; ++i) {
    const char c = buf[i];
    if (c == '\0') {
      *refusal = MakeRefusal(400, "a NUL byte in the message head");
      return 0;
    }
    if (c == '\r') {
      if (i + 1 < buf.size() && buf[i + 1] != '\n') {
        *refusal = MakeRefusal(400, "a bare CR in the message head");
        return 0;
      }
      continue;
    }
    if (c != '\n') continue;
    if (i == 0 || buf[i - 1] != '\r') {
      *refusal = MakeRefusal(400, "a line of the message head ends in LF without CR");
      return 0;
    }
    const size_t line_len = i - 1 - line_start;
    if (line_len == 0) {
      if (lines == 0) {
        *refusal = MakeRefusal(400, "the message starts with an empty line");
        return 0;
      }
      return i + 1;
    }
    if (lines > 0 && (buf[line_start] == ' ' || buf[line_start] == '\t')) {
      *refusal = MakeRefusal(400, "a folded header line (obs-fold)");
      return 0;
    }
    ++lines;
    if (lines - 1 > max_fields) {
      *refusal = MakeRefusal(431, absl::StrCat("more than ", max_fields, " header fields"));
      return 0;
    }
    line_start = i + 1;
  }
  if (buf.size() >= max_bytes) {
    *refusal = MakeRefusal(431, absl::StrCat("a message head over ", max_bytes, " bytes"));
  }
  return 0;
}

struct Http1RequestParser::State {
  http_parser parser;
  Http1Collected collected;
};

Http1RequestParser::Http1RequestParser() : state_(std::make_unique<State>()) {
  http_parser_init(&state_->parser, HTTP_REQUEST);
  state_->parser.data = &state_->collected;
}

Http1RequestParser::~Http1RequestParser() = default;

bool Http1RequestParser::done() const { return state_->collected.message_done; }

bool Http1RequestParser::ParseHead(absl::string_view head, const std::string& host,
                                   Http1Request* out, Http1Refusal* refusal) {
  http_parser& p = state_->parser;
  Http1Collected& c = state_->collected;
  const size_t n = http_parser_execute(&p, &Settings(), head.data(), head.size());
  const bool parsed = ParserOk(p) && (n == head.size() || c.message_done) && c.headers_done;
  TrimFields(&c.fields);
  out->method = http_method_str(static_cast<http_method>(p.method));
  out->target = c.url;
  out->fields = c.fields;
  out->http_minor = p.http_minor;

  if (c.headers_done && p.method == HTTP_CONNECT) {
    *refusal = MakeRefusal(405,
                           "CONNECT is not served: the proxy forwards requests to this host "
                           "only");
    return false;
  }
  int host_fields = 0;
  int te_fields = 0;
  std::string te;
  std::string length;
  bool upgrade = p.upgrade != 0;
  for (const HeaderField& f : c.fields) {
    // http-parser takes "Content-Length :5" as a length; the proxy would
    // read that name otherwise. A name is a token, or nothing is read.
    if (!vocab::IsHttpToken(f.name)) {
      *refusal = MakeRefusal(
          400, absl::StrCat("a header field name that is not a token: ", QuoteRequestText(f.name)));
      return false;
    }
    if (absl::EqualsIgnoreCase(f.name, "upgrade")) upgrade = true;
    if (absl::EqualsIgnoreCase(f.name, "host")) {
      ++host_fields;
      out->host_field = f.value;
    }
    if (absl::EqualsIgnoreCase(f.name, "transfer-encoding")) {
      ++te_fields;
      te = f.value;
    }
    if (absl::EqualsIgnoreCase(f.name, "expect") &&
        absl::EqualsIgnoreCase(f.value, "100-continue")) {
      out->expect_continue = true;
    }
    if (absl::EqualsIgnoreCase(f.name, "content-length")) {
      uint64_t v = 0;
      if (f.value.empty() || f.value.size() > 19 ||
          !std::all_of(f.value.begin(), f.value.end(),
                       [](char ch) { return absl::ascii_isdigit(ch); }) ||
          !absl::SimpleAtoi(f.value, &v)) {
        *refusal = MakeRefusal(400, "an invalid Content-Length");
        return false;
      }
      if (!length.empty() && length != f.value) {
        *refusal = MakeRefusal(400, "two different Content-Length values");
        return false;
      }
      length = f.value;
      out->has_length = true;
      out->content_length = v;
    }
  }
  if (upgrade) {
    *refusal = MakeRefusal(501,
                           "protocol upgrades (Upgrade: websocket, h2c, ...) are not "
                           "supported through the lazaret egress proxy");
    return false;
  }
  if (te_fields > 1 || (te_fields == 1 && !absl::EqualsIgnoreCase(te, "chunked"))) {
    *refusal = MakeRefusal(501, "a Transfer-Encoding other than \"chunked\"");
    return false;
  }
  if (te_fields == 1 && out->has_length) {
    *refusal = MakeRefusal(400, "both Content-Length and Transfer-Encoding");
    return false;
  }
  if (!parsed) {
    *refusal = MakeRefusal(400, absl::StrCat("a malformed request (",
                                             http_errno_description(HTTP_PARSER_ERRNO(&p)), ")"));
    return false;
  }
  if (p.http_major != 1 || p.http_minor > 1) {
    *refusal = MakeRefusal(505, "only HTTP/1.0 and HTTP/1.1 are served");
    return false;
  }
  if (host_fields != 1) {
    *refusal = MakeRefusal(400, host_fields == 0 ? "no Host field" : "several Host fields");
    return false;
  }
  out->chunked = te_fields == 1;
  // The framing the proxy forwards must be the one http-parser reads the
  // body with, or the upstream would see another message boundary.
  if (out->chunked != ((p.flags & F_CHUNKED) != 0) ||
      out->has_length != ((p.flags & F_CONTENTLENGTH) != 0)) {
    *refusal = MakeRefusal(400, "an ambiguous message framing");
    return false;
  }
  out->host = HostOfAuthority(out->host_field);
  if (out->host.empty()) {
    *refusal = MakeRefusal(
        400, absl::StrCat("the Host field is not a DNS name: ", QuoteRequestText(out->host_field)));
    return false;
  }
  if (!host.empty() && out->host != host) {
    *refusal = MakeRefusal(421, absl::StrCat("the Host field names ", out->host, ", not ", host,
                                             ", the name this connection was "
                                             "made for"));
    return false;
  }
  // The target: origin form, absolute form naming the same host, or "*".
  if (!c.url.empty() && c.url[0] == '/') {
    out->origin_target = c.url;
  } else if (c.url == "*") {
    if (p.method != HTTP_OPTIONS) {
      *refusal = MakeRefusal(400, "the target \"*\" is only for OPTIONS");
      return false;
    }
    out->origin_target = "*";
  } else {
    http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(c.url.data(), c.url.size(), 0, &u) != 0 ||
        !(u.field_set & (1 << UF_HOST)) || (u.field_set & (1 << UF_USERINFO))) {
      *refusal = MakeRefusal(400, "an invalid request target");
      return false;
    }
    auto field = [&](int f) {
      return (u.field_set & (1 << f))
                 ? absl::string_view(c.url).substr(u.field_data[f].off, u.field_data[f].len)
                 : absl::string_view();
    };
    const std::string authority_host = HostOfAuthority(field(UF_HOST));
    const std::string want = host.empty() ? out->host : host;
    if (authority_host != want) {
      *refusal =
          MakeRefusal(421, absl::StrCat("the request target names another host than ", want));
      return false;
    }
    absl::string_view path = field(UF_PATH);
    out->origin_target = absl::StrCat(path.empty() ? "/" : path,
                                      (u.field_set & (1 << UF_QUERY)) ? "?" : "", field(UF_QUERY));
  }
  out->keep_alive = http_should_keep_alive(&p) != 0;
  return true;
}

bool Http1RequestParser::FeedBody(absl::string_view data, std::string* body, size_t* consumed) {
  http_parser& p = state_->parser;
  Http1Collected& c = state_->collected;
  *consumed = 0;
  if (c.message_done) return true;
  c.body = body;
  const size_t n = http_parser_execute(&p, &Settings(), data.data(), data.size());
  c.body = nullptr;
  *consumed = n;
  return ParserOk(p) && (n == data.size() || c.message_done);
}

struct Http1ResponseParser::State {
  http_parser parser;
  Http1Collected collected;
  uint64_t content_length = 0;  // as the head said (http-parser counts it down)
  bool has_length = false;
};

Http1ResponseParser::Http1ResponseParser(bool head_request) : state_(std::make_unique<State>()) {
  http_parser_init(&state_->parser, HTTP_RESPONSE);
  state_->parser.data = &state_->collected;
  state_->collected.skip_body = head_request;
}

Http1ResponseParser::~Http1ResponseParser() = default;

bool Http1ResponseParser::ParseHead(absl::string_view head) {
  http_parser& p = state_->parser;
  Http1Collected& c = state_->collected;
  const size_t n = http_parser_execute(&p, &Settings(), head.data(), head.size());
  TrimFields(&c.fields);
  state_->content_length = p.content_length;
  state_->has_length = (p.flags & F_CONTENTLENGTH) != 0;
  for (const HeaderField& f : c.fields) {
    if (!vocab::IsHttpToken(f.name)) return false;  // see Http1RequestParser::ParseHead
  }
  return ParserOk(p) && c.headers_done && (n == head.size() || c.message_done);
}

bool Http1ResponseParser::Feed(absl::string_view data, std::string* body, size_t* consumed) {
  Http1Collected& c = state_->collected;
  *consumed = 0;
  if (c.message_done) return true;
  c.body = body;
  *consumed = http_parser_execute(&state_->parser, &Settings(), data.data(), data.size());
  c.body = nullptr;
  return ParserOk(state_->parser) && (*consumed == data.size() || c.message_done);
}

bool Http1ResponseParser::FeedEof(std::string* body) {
  Http1Collected& c = state_->collected;
  if (c.message_done) return true;
  c.body = body;
  http_parser_execute(&state_->parser, &Settings(), nullptr, 0);
  c.body = nullptr;
  return ParserOk(state_->parser) && c.message_done;
}

bool Http1ResponseParser::done() const { return state_->collected.message_done; }
int Http1ResponseParser::status() const { return state_->parser.status_code; }
bool Http1ResponseParser::keep_alive() const {
  return http_should_keep_alive(&state_->parser) != 0;
}
bool Http1ResponseParser::has_length() const { return state_->has_length; }
uint64_t Http1ResponseParser::content_length() const { return state_->content_length; }
const std::vector<HeaderField>& Http1ResponseParser::fields() const {
  return state_->collected.fields;
}

}  // namespace lazaret::egressd
