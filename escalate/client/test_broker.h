// Test support: a stand-in for lazaret-brokerd's escalation endpoint and a
// throwaway PKI, for tests of lazaret-escalate and of anything else that
// speaks the sandbox wire. Runs in the test process (threads, no
// privileges); it trusts the tests that drive it and nothing on the socket.
#ifndef LAZARET_ESCALATE_CLIENT_TEST_BROKER_H_
#define LAZARET_ESCALATE_CLIENT_TEST_BROKER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/wire/byte_stream.h"
#include "lazaret/escalation/v1/escalation.pb.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

namespace lazaret::escalation::testing {

struct PemPair {
  std::string cert;
  std::string key;
};

// An ECDSA P-256 CA in memory that issues leaf certificates.
class TestCa {
 public:
  static absl::StatusOr<std::unique_ptr<TestCa>> Create();
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  std::string ca_pem() const;
  // A leaf with the given SAN URIs, valid from now-60 s to now+1 h (or the
  // offsets given), extendedKeyUsage serverAuth or clientAuth.
  absl::StatusOr<PemPair> Issue(const std::vector<std::string>& san_uris, bool server,
                                long not_before_offset = -60, long not_after_offset = 3600) const;

 private:
  TestCa(X509* cert, EVP_PKEY* key) : cert_(cert), key_(key) {}
  X509* cert_;
  EVP_PKEY* key_;
};

// Writes ca.pem, client.pem, client.key into `dir` (0600).
absl::Status WriteClientCerts(const std::string& dir, const std::string& ca_pem,
                              const PemPair& client);

// One accepted, TLS-established connection, as the broker side sees it.
class TestBrokerConnection : public ByteStream {
 public:
  TestBrokerConnection(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~TestBrokerConnection() override;
  absl::StatusOr<size_t> Read(void* buf, size_t len) override;
  absl::Status WriteAll(const void* buf, size_t len) override;

  absl::Status Send(const v1::ServerFrame& frame);
  // Sends TLS close_notify (a clean end of stream for the client).
  void CloseCleanly();
  // The client certificate's SAN URIs.
  std::vector<std::string> PeerSanUris() const;

 private:
  int fd_;
  SSL* ssl_;
};

// Answers each connection with `handler`, one connection at a time, on
// 127.0.0.1 at a port of its own (as the session's relay would pass them). The handler receives the parsed first frame (or why it did
// not parse) and the connection; the connection is closed when it returns
// (without close_notify unless the handler sent one).
class TestBroker {
 public:
  using Handler = std::function<void(const absl::StatusOr<v1::EscalateRequest>& request,
                                     TestBrokerConnection& connection)>;

  // `server` is the broker's certificate and key; clients must present a
  // certificate that chains to `ca_pem`. Ignores SIGPIPE in the process.
  static absl::StatusOr<std::unique_ptr<TestBroker>> Start(const std::string& ca_pem,
                                                           const PemPair& server, Handler handler);
  ~TestBroker();

  // "127.0.0.1:<port>", for lazaret-escalate --endpoint.
  std::string endpoint() const;

  // The requests received so far (those that parsed).
  std::vector<v1::EscalateRequest> requests() const;
  // Handshakes that failed so far.
  int failed_handshakes() const;

 private:
  TestBroker(int listen_fd, uint16_t port, SSL_CTX* ctx, Handler handler)
      : listen_fd_(listen_fd), port_(port), ctx_(ctx), handler_(std::move(handler)) {}
  void Serve();

  int listen_fd_;
  uint16_t port_;
  SSL_CTX* ctx_;
  Handler handler_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<v1::EscalateRequest> requests_ ABSL_GUARDED_BY(mu_);
  int failed_handshakes_ ABSL_GUARDED_BY(mu_) = 0;
};

// A frame with a final result.
v1::ServerFrame ResultFrame(const v1::EscalateResponse& response);

}  // namespace lazaret::escalation::testing

#endif  // LAZARET_ESCALATE_CLIENT_TEST_BROKER_H_
