// The TLS ends of the egress proxy: the server side the sandbox's client
// talks to (a leaf of the session CA, chosen by the server name it sent)
// and the client side towards the real upstream (verified against the
// host's trust store, with hostname verification). Runs in
// lazaret-egressd (host service, no capability). Every byte from either
// peer is untrusted; a handshake is bounded in time.
#ifndef LAZARET_SERVICES_EGRESSD_TLS_H_
#define LAZARET_SERVICES_EGRESSD_TLS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/common/fs/fd.h"
#include "services/egressd/byte_stream.h"
#include "services/egressd/ca.h"
#include "services/common/openssl_util.h"

namespace lazaret::egressd {

// The longest a handshake may take, either side.
inline constexpr absl::Duration kTlsHandshakeTimeout = absl::Seconds(10);

// The longest ALPN list accepted from a caller (each name 1-255 bytes).
inline constexpr size_t kMaxAlpnNames = 8;

// Decides the server name a client sent (empty when it sent none): the
// leaf to present, or an error that refuses the handshake.
using PickLeaf =
    std::function<absl::StatusOr<std::shared_ptr<const LeafCert>>(const std::string& server_name)>;

// The ALPN protocols to select from for the server name a client sent, in
// server preference order (called after PickLeaf accepted the name).
using AlpnChooser = std::function<std::vector<std::string>(const std::string& server_name)>;

// A TLS connection as a non-blocking ByteStream. Not thread-safe: one
// thread uses a stream. The process ignores SIGPIPE or the socket is
// written with MSG_NOSIGNAL semantics (OpenSSL writes with write(2); the
// service must ignore SIGPIPE).
class TlsStream : public ByteStream {
 public:
  ~TlsStream() override;
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  IoStatus Read(char* buf, size_t cap, size_t* done) override;
  IoStatus Write(const char* data, size_t len, size_t* done) override;
  void ShutdownWrite() override;
  int fd() const override { return fd_.get(); }
  short WantEvents() const override { return want_; }
  bool HasBuffered() const override;
  std::string Alpn() const override;
  std::string ServerName() const override;
  std::string LastError() const override { return last_error_; }

 protected:
  TlsStream(fs::UniqueFd fd, SslPtr ssl);
  // Runs the handshake until done, refused, or `deadline`.
  absl::Status Handshake(absl::Time deadline, const std::string& refusal_prefix);
  IoStatus Fail(int ret, const char* what);

  fs::UniqueFd fd_;
  SslPtr ssl_;
  short want_;
  bool failed_ = false;
  bool write_shut_ = false;
  std::string last_error_;
};

// The server context all client connections share: TLS 1.2 and 1.3, no
// session resumption (each handshake is decided by its server name
// again), no renegotiation, no certificate until the server name picks
// one. Thread-safe once made.
class TlsServerContext {
 public:
  static absl::StatusOr<std::unique_ptr<TlsServerContext>> Create();
  SSL_CTX* get() const { return ctx_.get(); }

 private:
  explicit TlsServerContext(SslCtxPtr ctx) : ctx_(std::move(ctx)) {}
  SslCtxPtr ctx_;
};

class TlsServerStream : public TlsStream {
 public:
  // Handshakes on an accepted connection (made non-blocking). `pick`
  // decides the server name; ALPN selects the first of `alpn` (server
  // preference, e.g. {"h2", "http/1.1"}) that the client offers, or none.
  // Fails when `deadline` passes, the client sent no acceptable name, or
  // the handshake fails; the error names the cause.
  static absl::StatusOr<std::unique_ptr<TlsServerStream>> Accept(
      const TlsServerContext& ctx, fs::UniqueFd fd, const PickLeaf& pick,
      const std::vector<std::string>& alpn, absl::Time deadline);
  // The same with the ALPN list chosen per server name.
  static absl::StatusOr<std::unique_ptr<TlsServerStream>> AcceptChoosingAlpn(
      const TlsServerContext& ctx, fs::UniqueFd fd, const PickLeaf& pick,
      const AlpnChooser& alpn, absl::Time deadline);

 private:
  using TlsStream::TlsStream;
};

// Where the proxy's trust in upstreams comes from.
struct UpstreamTrust {
  // A PEM file of the CAs to trust; empty: the host's default store
  // (SSL_CTX_set_default_verify_paths), as in production.
  std::string ca_file;
};

// The client context all upstream connections share: TLS 1.2 and above,
// peer verification required against the trust store. Thread-safe once
// made.
class TlsClientContext {
 public:
  static absl::StatusOr<std::unique_ptr<TlsClientContext>> Create(const UpstreamTrust& trust);
  SSL_CTX* get() const { return ctx_.get(); }

 private:
  explicit TlsClientContext(SslCtxPtr ctx) : ctx_(std::move(ctx)) {}
  SslCtxPtr ctx_;
};

class TlsClientStream : public TlsStream {
 public:
  // Handshakes on a connected socket (made non-blocking): SNI `host`,
  // ALPN offering `alpn` (none when empty), the certificate verified for
  // `host`. The error says why it failed (never more than host names and
  // OpenSSL's reasons).
  static absl::StatusOr<std::unique_ptr<TlsClientStream>> Connect(
      const TlsClientContext& ctx, fs::UniqueFd fd, const std::string& host,
      const std::vector<std::string>& alpn, absl::Time deadline);

 private:
  using TlsStream::TlsStream;
};

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_TLS_H_
