// libFuzzer target for the egress proxy's HTTP/1.1 parser layer
// (services/egressd/http1_parse.h): the bytes a sandbox sends as a request
// and an upstream as a response, through the same head scan, head checks
// and body framing ServeHttp1 uses. Properties: nothing crashes; a
// refusal is a 4xx/5xx status; an accepted request names the connection's
// host, has an origin-form (or "*") target to forward, fields free of CR,
// LF and NUL, never both framings; a body never exceeds its
// Content-Length, and equals it once the message is done.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "services/egressd/http1_parse.h"

namespace {

using lazaret::egressd::HeaderField;
using lazaret::egressd::Http1Refusal;
using lazaret::egressd::Http1Request;
using lazaret::egressd::Http1RequestParser;
using lazaret::egressd::Http1ResponseParser;
using lazaret::egressd::ScanHttp1Head;

constexpr char kHost[] = "api.example.com";

bool Clean(absl::string_view s) {
  return s.find_first_of(absl::string_view("\r\n\0", 3)) == absl::string_view::npos;
}

// Feeds `rest` in pieces whose sizes come from `step`.
template <typename Parser, typename FeedFn>
std::string FeedPieces(Parser& parser, absl::string_view rest, size_t step, FeedFn feed) {
  std::string body;
  while (!rest.empty() && !parser.done()) {
    const absl::string_view piece = rest.substr(0, step);
    size_t consumed = 0;
    if (!feed(piece, &body, &consumed)) break;
    if (consumed > piece.size()) abort();
    rest.remove_prefix(consumed);
    if (consumed < piece.size() && !parser.done()) abort();
  }
  return body;
}

void Request(absl::string_view input, size_t step) {
  Http1Refusal refusal;
  const size_t n = ScanHttp1Head(input, 64 * 1024, 100, &refusal);
  if (n == 0) {
    if (refusal.status != 0 && (refusal.status < 400 || refusal.status > 599)) abort();
    return;
  }
  Http1RequestParser parser;
  Http1Request req;
  if (!parser.ParseHead(input.substr(0, n), kHost, &req, &refusal)) {
    if (refusal.status < 400 || refusal.status > 599 || refusal.reason.empty()) abort();
    return;
  }
  if (req.host != kHost) abort();
  if (req.origin_target != "*" && (req.origin_target.empty() || req.origin_target[0] != '/')) {
    abort();
  }
  if (!Clean(req.origin_target) || !Clean(req.method) || req.method.empty()) abort();
  for (const HeaderField& f : req.fields) {
    if (!Clean(f.name) || !Clean(f.value)) abort();
  }
  if (req.chunked && req.has_length) abort();
  const std::string body =
      FeedPieces(parser, input.substr(n), step,
                 [&](absl::string_view piece, std::string* out, size_t* consumed) {
                   return parser.FeedBody(piece, out, consumed);
                 });
  if (req.has_length) {
    if (body.size() > req.content_length) abort();
    if (parser.done() && body.size() != req.content_length) abort();
  }
  if (!req.chunked && !req.has_length && !body.empty()) abort();
}

void Response(absl::string_view input, size_t step, bool head_request) {
  Http1Refusal refusal;
  const size_t n = ScanHttp1Head(input, 64 * 1024, 256, &refusal);
  if (n == 0) return;
  Http1ResponseParser parser(head_request);
  if (!parser.ParseHead(input.substr(0, n))) return;
  const uint64_t length = parser.content_length();
  const std::string body =
      FeedPieces(parser, input.substr(n), step,
                 [&](absl::string_view piece, std::string* out, size_t* consumed) {
                   return parser.Feed(piece, out, consumed);
                 });
  if (head_request && !body.empty()) abort();
  if (!head_request && parser.has_length() && parser.status() >= 200 && parser.status() != 204 &&
      parser.status() != 304 && body.size() > length) {
    abort();
  }
  std::string tail;
  parser.FeedEof(&tail);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 64;
  const absl::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  Request(input, step);
  Response(input, step, (data[0] & 0x80) != 0);
  return 0;
}
