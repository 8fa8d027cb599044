// The parser layer of the egress proxy's HTTP/1.1 side (http1.h): where a
// message head ends and whether its bytes are acceptable, a request head
// checked against the proxy's rules, and the framing of request and
// response bodies, over Debian's http-parser (nodejs/http-parser 2.9.4).
// Runs in lazaret-egressd (host service, no capability). Pure: no I/O.
// Every byte is hostile (the sandbox's requests, the upstream's
// responses); this is what the fuzzer drives.
#ifndef LAZARET_SERVICES_EGRESSD_HTTP1_PARSE_H_
#define LAZARET_SERVICES_EGRESSD_HTTP1_PARSE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "services/egressd/guard.h"

namespace lazaret::egressd {

// A refusal the proxy answers itself.
struct Http1Refusal {
  int status = 0;      // 0: none
  std::string reason;  // one line, no request data but escaped quotes
};

// Where a message head ends in `buf`: its length (through the empty
// line), or 0 when more bytes are needed. A refusal when the bytes seen
// break a rule above (size, field count, NUL, bare CR/LF, obs-fold).
size_t ScanHttp1Head(absl::string_view buf, size_t max_bytes, size_t max_fields,
                     Http1Refusal* refusal);

// One request head, checked.
struct Http1Request {
  std::string method;
  std::string target;               // as sent
  std::string origin_target;        // what is forwarded (path and query, or "*")
  std::string host_field;           // the Host field's value as sent
  std::string host;                 // Host, lower case, port and one trailing dot removed
  std::vector<HeaderField> fields;  // every field, in order, values trimmed
  int http_minor = 1;
  bool keep_alive = true;
  bool chunked = false;
  bool has_length = false;
  uint64_t content_length = 0;
  bool expect_continue = false;
};

// Incremental parser of one request (head, then body) over http-parser.
class Http1RequestParser {
 public:
  Http1RequestParser();
  ~Http1RequestParser();
  Http1RequestParser(const Http1RequestParser&) = delete;
  Http1RequestParser& operator=(const Http1RequestParser&) = delete;

  // Parses a head (exactly as ScanHttp1Head delimited it) and checks it
  // against `host` (the connection's; empty: not checked). False with
  // `*refusal` set when refused.
  bool ParseHead(absl::string_view head, const std::string& host, Http1Request* out,
                 Http1Refusal* refusal);
  // Feeds body bytes: appends the body's content to `*body` and returns
  // the bytes consumed (fewer than given when the message ended: the rest
  // is the next request). False when the framing is broken.
  bool FeedBody(absl::string_view data, std::string* body, size_t* consumed);
  bool done() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Incremental parser of one response (head, then body).
class Http1ResponseParser {
 public:
  // `head_request`: the response answers HEAD (it has no body).
  explicit Http1ResponseParser(bool head_request);
  ~Http1ResponseParser();
  Http1ResponseParser(const Http1ResponseParser&) = delete;
  Http1ResponseParser& operator=(const Http1ResponseParser&) = delete;

  // Parses a head as ScanHttp1Head delimited it; false when malformed.
  bool ParseHead(absl::string_view head);
  // Feeds body bytes (as Http1RequestParser::FeedBody).
  bool Feed(absl::string_view data, std::string* body, size_t* consumed);
  // The upstream closed: ends a close-delimited body; false when the
  // message was cut short.
  bool FeedEof(std::string* body);
  bool done() const;
  int status() const;
  bool keep_alive() const;
  bool has_length() const;          // a Content-Length field frames the body
  uint64_t content_length() const;  // the head's Content-Length (0: none)
  const std::vector<HeaderField>& fields() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Sandbox text as a refusal or the log quotes it: escaped to printable
// ASCII (vocab::EscapeForTerminalCut), at most this many bytes of it.
inline constexpr size_t kMaxQuotedRequestText = 200;
std::string QuoteRequestText(absl::string_view raw);

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_HTTP1_PARSE_H_
