// The HTTP/2 side of the egress proxy: one client connection (TLS done,
// ALPN "h2") whose streams are decided by the RequestGuard and forwarded
// to one upstream HTTP/2 connection, with nghttp2 on both sides. Frames
// are never passed through: each side is its own nghttp2 session, so
// flow control, SETTINGS and limits are the proxy's own. Runs in
// lazaret-egressd, one thread per client connection; trusts neither the
// client (the sandbox) nor the upstream: every size, count and wait is
// bounded by Http2Limits.
#ifndef LAZARET_SERVICES_EGRESSD_HTTP2_HTTP2_H_
#define LAZARET_SERVICES_EGRESSD_HTTP2_HTTP2_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "services/egressd/byte_stream.h"
#include "services/egressd/guard.h"
#include "services/egressd/request_log.h"

namespace lazaret::egressd {

struct Http2Limits {
  uint32_t max_concurrent_streams = 100;
  // Decoded size of one header block (RFC 9113 6.5.2 counting: name,
  // value and 32 per field), and the most compressed bytes it may take.
  // Beyond it the client's connection ends (GOAWAY ENHANCE_YOUR_CALM);
  // an upstream response beyond it gets the client a 502.
  uint32_t max_header_list_bytes = 64 * 1024;
  // Seconds without a byte either way before the connection ends.
  int idle_seconds = 300;
  // Body bytes the proxy may hold for one connection in each direction:
  // the connection-level receive window it grants the client (request
  // bodies) and each upstream (responses). Bytes are acknowledged only
  // when the other side took them, so a slow reader stalls its writer.
  uint32_t max_buffered_bytes = 1024 * 1024;
  // Per-second budgets of frames that cost the proxy work without moving
  // a request forward. Beyond one, the client's connection ends with
  // GOAWAY ENHANCE_YOUR_CALM (an upstream's: it is dropped, its streams
  // get 502). Rapid reset (CVE-2023-44487) meets the resets' budget; the
  // new streams' budget is wide enough for a busy client whose requests
  // complete (a package manager's burst: 400 requests a second on one
  // connection ended it at 500), and bounds the rest.
  uint32_t max_new_streams_per_second = 5000;
  uint32_t max_resets_per_second = 100;
  uint32_t max_control_frames_per_second = 100;  // SETTINGS, PING, PRIORITY
  uint32_t max_empty_data_frames_per_second = 100;
};

// Opens the upstream connection (TLS done, ALPN "h2"); called lazily at
// the first forwarded request, and again after the upstream went away.
using OpenUpstream = std::function<absl::StatusOr<std::unique_ptr<ByteStream>>()>;

// Serves `client` until it or the proxy ends the connection. `host` is the
// TLS server name the client connected for; a request whose :authority or
// Host names another host is refused (421), CONNECT too (405). Responses
// keep their Content-Length (redaction keeps lengths); a compressed
// response to a request that carried a secret gets the client a 502.
// `open_upstream` runs on the calling thread and may block (dial, TLS).
// Every request whose header block arrived is logged to `log` once, when
// its stream ends (or the connection does).
void ServeHttp2(ByteStream& client, const std::string& host, const OpenUpstream& open_upstream,
                const RequestGuard& guard, const RequestLogSink& log, const Http2Limits& limits);

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_HTTP2_HTTP2_H_
