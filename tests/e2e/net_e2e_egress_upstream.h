// The fake vendor API behind the egress proxy in the network end-to-end
// tests (net_e2e_egress_test.cc): a CA of the test's own, and an HTTPS
// server (HTTP/1.1, and HTTP/2 when ALPN offers h2) on one address of a test host whose certificate
// that CA signed for the test's names. It checks the credentials each request carries against the
// real values and says so in its answer, records every request and TLS handshake it saw, streams
// server-sent events on /sse
// (/sse?n=N: N of them), echoes a real value on /echo-key (for the
// proxy to redact) and answers the vendor SDK's POST /v1/messages in the
// Messages API's shape. Runs in the
// test process as root; its sockets live in the test host's network
// namespace. What it reads came through the proxy, which the test does not
// trust: every size is bounded and a malformed request ends its
// connection.
#ifndef LAZARET_TESTS_E2E_NET_E2E_EGRESS_UPSTREAM_H_
#define LAZARET_TESTS_E2E_NET_E2E_EGRESS_UPSTREAM_H_

#include <nghttp2/nghttp2.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "tests/e2e/net_test_hosts.h"

namespace lazaret::test::e2e::net {

// A CA and a server certificate it signed for `names` (DNS SANs) and
// `address` (an IP SAN).
class UpstreamPki {
 public:
  UpstreamPki(const std::vector<std::string>& names, const std::string& address);
  ~UpstreamPki();
  UpstreamPki(const UpstreamPki&) = delete;
  UpstreamPki& operator=(const UpstreamPki&) = delete;

  std::string CaPem() const;
  // The CA's subject common name: what a client sees as the issuer of a
  // certificate the upstream itself served.
  static constexpr char kCaName[] = "Lazaret e2e upstream CA";
  X509* server() const { return server_; }
  EVP_PKEY* server_key() const { return server_key_; }

 private:
  EVP_PKEY* ca_key_ = nullptr;
  X509* ca_ = nullptr;
  EVP_PKEY* server_key_ = nullptr;
  X509* server_ = nullptr;
};

// The real values the upstream accepts: the header secret (x-api-key), the
// bearer token (Authorization: Bearer) and the basic password
// (Authorization: Basic base64(user:password)).
struct UpstreamCredentials {
  std::string api_key;
  std::string bearer;
  std::string basic_password;
};

// One request as the upstream received it. Header names lower case; a
// repeated header keeps its last value.
struct UpstreamRequest {
  std::string protocol;  // "HTTP/1.1" or "HTTP/2"
  std::string sni;
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;
  std::string body;
  int64_t realtime_ns = 0;
  bool key_ok = false;
  bool bearer_ok = false;
  bool basic_ok = false;
};

class FakeUpstream {
 public:
  // Listens on `address`:`port` inside `host`'s namespace.
  static absl::StatusOr<std::unique_ptr<FakeUpstream>> Start(const TestHost& host,
                                                             const std::string& address,
                                                             uint16_t port, const UpstreamPki& pki,
                                                             UpstreamCredentials credentials);
  ~FakeUpstream();
  FakeUpstream(const FakeUpstream&) = delete;
  FakeUpstream& operator=(const FakeUpstream&) = delete;

  std::vector<UpstreamRequest> Requests() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t RequestCount() const ABSL_LOCKS_EXCLUDED(mu_);
  // The server name of every TLS handshake completed ("" without SNI).
  std::vector<std::string> Handshakes() const ABSL_LOCKS_EXCLUDED(mu_);
  // CLOCK_REALTIME (ns) at which each event of the last /sse stream was
  // written.
  std::vector<int64_t> LastSseSent() const ABSL_LOCKS_EXCLUDED(mu_);
  // Requests that carried any of `needles` anywhere (target, a header
  // name or value, the body).
  size_t RequestsCarrying(const std::vector<std::string>& needles) const ABSL_LOCKS_EXCLUDED(mu_);

  // Server-sent events of /sse (unless ?n= says): how many, how far apart.
  static constexpr int kSseEvents = 5;
  static constexpr int kSseGapMs = 200;
  // The text of the message POST /v1/messages answers when the key was
  // right (a request with an anthropic-version header, as the vendor's SDK
  // sends: the Messages API's shape, JSON or, for "stream": true, its
  // server-sent events; 401 with the API's error body otherwise).
  static constexpr char kMessagesText[] = "key ok";

 private:
  // A response's headers (lower-case names) and whole body.
  struct Reply {
    int status = 200;  // 200 or 401
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
  };

  FakeUpstream() = default;
  void Accept();
  void Serve(int fd);
  // One HTTP/1.1 request read from `ssl`, answered; false when the
  // connection ends.
  bool ServeOne(SSL* ssl, const std::string& sni, std::string* pending);
  void Answer(SSL* ssl, const UpstreamRequest& r, bool close);
  // An HTTP/2 connection (ALPN h2) served to its end.
  void ServeHttp2(SSL* ssl, const std::string& sni);
  static int OnH2Header(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
                        size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                        void* user_data);
  static int OnH2FrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data);
  // Judges a request's credentials and records it.
  void Record(UpstreamRequest* r) ABSL_LOCKS_EXCLUDED(mu_);
  Reply MakeReply(const UpstreamRequest& r) const;
  // POST /v1/messages from the vendor's SDK (it sends anthropic-version).
  Reply MessagesReply(const UpstreamRequest& r) const;

  SSL_CTX* ctx_ = nullptr;
  UpstreamCredentials credentials_;
  int listen_ = -1;
  int stop_ = -1;  // eventfd
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<int> live_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<UpstreamRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> handshakes_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> sse_sent_ ABSL_GUARDED_BY(mu_);
};

// Parses an HTTP/1.1 response as a client printed it (status line,
// headers, body; a chunked body is decoded). status 0 when there was no
// status line.
struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};
HttpResponse ParseHttpResponse(const std::string& text);


}  // namespace lazaret::test::e2e::net

#endif  // LAZARET_TESTS_E2E_NET_E2E_EGRESS_UPSTREAM_H_
