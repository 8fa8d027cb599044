// The HTTP/1.1 side of the egress proxy: one client connection (TLS done,
// or plain on port 80) whose requests are checked, decided by the
// RequestGuard and forwarded one at a time to one upstream connection,
// with the responses streamed back through the Redactor. Runs in
// lazaret-egressd (host service, no capability). Every byte from the
// client (the sandbox) and from the upstream is hostile: heads are bounded
// in bytes, fields and time, framing is re-made by the proxy (never passed
// through), and anything ambiguous is refused. Parsing is Debian's
// http-parser (nodejs/http-parser 2.9.4); this file adds the strict
// checks on top of it.
//
// Behaviour, request side:
//   - a head is at most 64 KiB and 100 fields (431), every line ends in
//     CRLF, no NUL, no bare CR or LF, no obs-fold, every field name a
//     token ("Content-Length :5" is refused), the framing http-parser
//     reads the one the proxy forwards (400), complete within 30 s of its
//     first byte (408);
//   - Content-Length and Transfer-Encoding both (400), two differing
//     Content-Length values (400), a Transfer-Encoding other than exactly
//     "chunked" (501), CONNECT (405), any Upgrade (501), no or several Host
//     fields (400), an HTTP version other than 1.0/1.1 (505);
//   - Host (port stripped, case-insensitive) must name the connection's
//     host (421); an absolute-form target must name it too (421) and is
//     forwarded in origin form; "*" only with OPTIONS;
//   - hop-by-hop fields (RFC 9110 7.6.1: Connection and those it names,
//     Keep-Alive, Proxy-Connection, TE, Transfer-Encoding, Upgrade,
//     Trailer, Proxy-Authorization) and Expect are not forwarded;
//     "Expect: 100-continue" is answered by the proxy once the request is
//     allowed; the body is re-framed (same Content-Length, or re-chunked;
//     trailers dropped) and scanned for placeholders (one aborts it: 403);
//   - every refusal answers text/plain and closes the connection.
// Response side: the head is at most 64 KiB and 256 fields, in
// `response_seconds`; 1xx responses are dropped (the proxy answers 100
// itself); 101 is refused; hop-by-hop fields dropped; header values and
// the body redacted (same length); the body re-framed (Content-Length
// kept, chunked or close-delimited bodies re-chunked for an HTTP/1.1
// client), streamed as it arrives; a compressed body to a request that
// carried a secret is refused (502). Upstream failures answer 502 with the
// reason (host and port, OpenSSL's or the dialer's text; never request
// data) when no response byte was sent yet; else the client connection is
// cut. Each request gives one RequestRecord. When the proxy ends a
// connection it reads and drops what the client still sends for up to
// 2 s / 256 KiB (a lingering close), so its last answer is not lost to a
// TCP reset.
#ifndef LAZARET_SERVICES_EGRESSD_HTTP1_H_
#define LAZARET_SERVICES_EGRESSD_HTTP1_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/egressd/byte_stream.h"
#include "services/egressd/guard.h"
#include "services/egressd/http1_parse.h"
#include "services/egressd/request_log.h"

namespace lazaret::egressd {

struct Http1Limits {
  size_t max_head_bytes = 64 * 1024;  // request head, request line included: 431
  size_t max_fields = 100;            // request header fields: 431
  size_t max_response_head_bytes = 64 * 1024;  // 502
  size_t max_response_fields = 256;            // 502
  // A request head must be whole this long after its first byte.
  int head_seconds = 30;
  // Waiting for the next request, or for a byte either way mid-message.
  int idle_seconds = 300;
  // Waiting for the upstream's response head once the request was sent
  // (a model API may think for minutes before its first byte).
  int response_seconds = 300;
};

// Opens the upstream connection for `host` (TLS done with ALPN "http/1.1",
// or plain for port 80). Called at the first forwarded request and again
// after the upstream went away.
using Http1UpstreamOpener =
    std::function<absl::StatusOr<std::unique_ptr<ByteStream>>(const std::string& host)>;

// Serves `client` until it or the proxy ends the connection. `host` is the
// TLS server name the client connected for (lower case); empty with
// `plaintext` (port 80): the first request's Host field names it, and it
// must be a host `guard` intercepts (else 403). Every request is logged to
// `log`.
void ServeHttp1(ByteStream& client, const std::string& host, bool plaintext,
                const Http1UpstreamOpener& open_upstream, const RequestGuard& guard,
                const RequestLogSink& log, const Http1Limits& limits);

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_HTTP1_H_
