// One client connection of the egress proxy, from its first byte to its
// end: the TLS handshake with a leaf of the session CA for the name the
// client asked (port 443) or plain HTTP (port 80), then HTTP/2 or
// HTTP/1.1 by ALPN, each request decided by the RequestGuard and forwarded
// to the real upstream over a socket the dialer provides, verified against
// the host's trust store. Runs in lazaret-egressd (host service, no
// capability), one thread per connection; how many connections run at
// once is the service's limit. The client is the sandbox (hostile); the
// upstream is untrusted too.
#ifndef LAZARET_SERVICES_EGRESSD_CONNECTION_H_
#define LAZARET_SERVICES_EGRESSD_CONNECTION_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/common/fs/fd.h"
#include "services/egressd/ca.h"
#include "services/egressd/guard.h"
#include "services/egressd/http1.h"
#include "services/egressd/http2/http2.h"
#include "services/egressd/request_log.h"
#include "services/egressd/tls.h"
#include "services/egressd/upstream.h"

namespace lazaret::egressd {

// The ports a connection may have been made to (its original destination
// port, as the router passes it).
inline constexpr uint16_t kHttpsPort = 443;
inline constexpr uint16_t kHttpPort = 80;

struct ConnectionLimits {
  Http1Limits http1;
  Http2Limits http2;
  // The client's TLS handshake, and each upstream's (dial excluded).
  absl::Duration handshake_timeout = kTlsHandshakeTimeout;
};

// What a connection is served with. The guard, CA and dialer must
// outlive the connection; `log` is called from connection threads
// concurrently and must be thread-safe. The TLS contexts behind it (the
// server side's, and the upstream side's for `trust`, whose store is
// loaded once) are built at first use and shared by every connection of
// the process.
struct ConnectionContext {
  const RequestGuard* guard = nullptr;
  SessionCa* ca = nullptr;
  UpstreamDialer* dialer = nullptr;
  RequestLogSink log;
  UpstreamTrust trust;  // empty ca_file: the host's default store
  ConnectionLimits limits;
};

// Serves one accepted client connection until it ends (blocking; run it
// on the connection's own thread). `local_port` is the port the client
// connected to: 443 is TLS (the server name must be present, a plain DNS
// name and one the guard intercepts, else the handshake is refused and one
// RequestRecord with `refused` set is logged), 80 is plain HTTP/1.1 (the
// Host field names the host; secrets are never sent), any other port is
// closed at once (and logged). A TLS context that cannot be built (an
// unreadable trust file) closes the connection, logged. ALPN "h2" is served by ServeHttp2 with
// upstreams offered "h2"; anything else by ServeHttp1 with upstreams
// offered "http/1.1". Upstreams are dialed on port 443 (TLS, verified for
// the host) or 80 (plain).
void ServeConnection(fs::UniqueFd client_fd, uint16_t local_port, const ConnectionContext& ctx);

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_CONNECTION_H_
