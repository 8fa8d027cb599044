#include "services/egressd/tls.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::egressd {
namespace {

// What the server callbacks of one handshake see (SSL app data while
// Accept runs).
struct ServerHandshake {
  const PickLeaf* pick = nullptr;
  const AlpnChooser* choose_alpn = nullptr;
  std::vector<std::string> alpn;
  std::string refusal;  // why the server name was refused
  std::shared_ptr<const LeafCert> leaf;
};

absl::Status SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return ErrnoStatus("making a socket non-blocking", errno);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> AlpnWire(const std::vector<std::string>& alpn) {
  if (alpn.size() > kMaxAlpnNames) return absl::InvalidArgumentError("too many ALPN names");
  std::string wire;
  for (const std::string& name : alpn) {
    if (name.empty() || name.size() > 255) return absl::InvalidArgumentError("bad ALPN name");
    wire.push_back(static_cast<char>(name.size()));
    wire += name;
  }
  return wire;
}

int OnServerName(SSL* ssl, int* alert, void* /*arg*/) {
  auto* hs = static_cast<ServerHandshake*>(SSL_get_app_data(ssl));
  if (hs == nullptr || hs->pick == nullptr) {
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  absl::StatusOr<std::shared_ptr<const LeafCert>> leaf = (*hs->pick)(name != nullptr ? name : "");
  if (!leaf.ok() || *leaf == nullptr) {
    hs->refusal = leaf.ok() ? std::string("no certificate for the server name")
                            : std::string(leaf.status().message());
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  if (SSL_use_certificate(ssl, (*leaf)->cert.get()) != 1 ||
      SSL_use_PrivateKey(ssl, (*leaf)->key.get()) != 1) {
    hs->refusal = "installing the leaf certificate failed";
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  hs->leaf = *std::move(leaf);
  if (hs->choose_alpn != nullptr) {
    hs->alpn = (*hs->choose_alpn)(name != nullptr ? name : "");
    if (hs->alpn.size() > kMaxAlpnNames) hs->alpn.resize(kMaxAlpnNames);
  }
  return SSL_TLSEXT_ERR_OK;
}

int OnAlpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
           unsigned int inlen, void* /*arg*/) {
  auto* hs = static_cast<ServerHandshake*>(SSL_get_app_data(ssl));
  if (hs == nullptr) return SSL_TLSEXT_ERR_NOACK;
  for (const std::string& want : hs->alpn) {
    for (unsigned int i = 0; i < inlen;) {
      const unsigned int len = in[i];
      if (i + 1 + len > inlen) break;  // malformed list: OpenSSL checked it; be safe
      if (len == want.size() && std::memcmp(in + i + 1, want.data(), len) == 0) {
        *out = in + i + 1;
        *outlen = static_cast<unsigned char>(len);
        return SSL_TLSEXT_ERR_OK;
      }
      i += 1 + len;
    }
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// Settings both sides share.
void CommonSettings(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
}

}  // namespace

TlsStream::TlsStream(fs::UniqueFd fd, SslPtr ssl)
    : fd_(std::move(fd)), ssl_(std::move(ssl)), want_(POLLIN) {}

TlsStream::~TlsStream() {
  if (ssl_ != nullptr) SSL_set_app_data(ssl_.get(), nullptr);
}

absl::Status TlsStream::Handshake(absl::Time deadline, const std::string& what) {
  while (true) {
    ERR_clear_error();
    const int r = SSL_do_handshake(ssl_.get());
    if (r == 1) {
      want_ = POLLIN;
      return absl::OkStatus();
    }
    const int e = SSL_get_error(ssl_.get(), r);
    short events = 0;
    if (e == SSL_ERROR_WANT_READ) events = POLLIN;
    if (e == SSL_ERROR_WANT_WRITE) events = POLLOUT;
    if (events == 0) {
      failed_ = true;
      if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        return absl::UnavailableError(absl::StrCat(what, ": the peer closed the connection"));
      }
      return OpenSslError(what);
    }
    while (true) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) {
        failed_ = true;
        return absl::DeadlineExceededError(absl::StrCat(what, ": timed out"));
      }
      pollfd p{fd_.get(), events, 0};
      const int pr = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left) + 1));
      if (pr > 0 || (pr < 0 && errno != EINTR)) break;
    }
  }
}

IoStatus TlsStream::Fail(int ret, const char* what) {
  const int e = SSL_get_error(ssl_.get(), ret);
  switch (e) {
    case SSL_ERROR_WANT_READ:
      want_ = POLLIN;
      return IoStatus::kAgain;
    case SSL_ERROR_WANT_WRITE:
      want_ = POLLOUT;
      return IoStatus::kAgain;
    case SSL_ERROR_ZERO_RETURN:
      return IoStatus::kClosed;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0 && errno == 0) return IoStatus::kClosed;
      last_error_ = absl::StrCat(what, ": ", errno != 0 ? strerror(errno) : "I/O error");
      ERR_clear_error();
      failed_ = true;
      return IoStatus::kError;
    default:
      last_error_ = std::string(OpenSslError(what).message());
      failed_ = true;
      return IoStatus::kError;
  }
}

IoStatus TlsStream::Read(char* buf, size_t cap, size_t* done) {
  *done = 0;
  if (failed_) return IoStatus::kError;
  ERR_clear_error();
  errno = 0;
  size_t n = 0;
  const int r = SSL_read_ex(ssl_.get(), buf, cap, &n);
  if (r == 1) {
    *done = n;
    return IoStatus::kOk;
  }
  return Fail(r, "TLS read");
}

IoStatus TlsStream::Write(const char* data, size_t len, size_t* done) {
  *done = 0;
  if (failed_ || write_shut_) return IoStatus::kError;
  if (len == 0) return IoStatus::kOk;
  ERR_clear_error();
  errno = 0;
  size_t n = 0;
  const int r = SSL_write_ex(ssl_.get(), data, len, &n);
  if (r == 1) {
    *done = n;
    return IoStatus::kOk;
  }
  const IoStatus s = Fail(r, "TLS write");
  return s == IoStatus::kClosed ? IoStatus::kError : s;
}

void TlsStream::ShutdownWrite() {
  if (write_shut_) return;
  write_shut_ = true;
  if (!failed_) {
    ERR_clear_error();
    SSL_shutdown(ssl_.get());  // queues close_notify; never waits for the peer's
  }
  shutdown(fd_.get(), SHUT_WR);
}

bool TlsStream::HasBuffered() const { return !failed_ && SSL_pending(ssl_.get()) > 0; }

std::string TlsStream::Alpn() const {
  const unsigned char* p = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl_.get(), &p, &len);
  return p != nullptr ? std::string(reinterpret_cast<const char*>(p), len) : std::string();
}

std::string TlsStream::ServerName() const {
  const char* name = SSL_get_servername(ssl_.get(), TLSEXT_NAMETYPE_host_name);
  return name != nullptr ? name : "";
}

absl::StatusOr<std::unique_ptr<TlsServerContext>> TlsServerContext::Create() {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (ctx == nullptr) return OpenSslError("creating the TLS server context");
  CommonSettings(ctx.get());
  SSL_CTX_set_num_tickets(ctx.get(), 0);
  SSL_CTX_set_tlsext_servername_callback(ctx.get(), OnServerName);
  SSL_CTX_set_alpn_select_cb(ctx.get(), OnAlpn, nullptr);
  return std::unique_ptr<TlsServerContext>(new TlsServerContext(std::move(ctx)));
}

absl::StatusOr<std::unique_ptr<TlsServerStream>> TlsServerStream::Accept(
    const TlsServerContext& ctx, fs::UniqueFd fd, const PickLeaf& pick,
    const std::vector<std::string>& alpn, absl::Time deadline) {
  LAZ_RETURN_IF_ERROR(AlpnWire(alpn).status());
  const AlpnChooser fixed = [&alpn](const std::string&) { return alpn; };
  return AcceptChoosingAlpn(ctx, std::move(fd), pick, fixed, deadline);
}

absl::StatusOr<std::unique_ptr<TlsServerStream>> TlsServerStream::AcceptChoosingAlpn(
    const TlsServerContext& ctx, fs::UniqueFd fd, const PickLeaf& pick,
    const AlpnChooser& alpn, absl::Time deadline) {
  LAZ_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
  SslPtr ssl(SSL_new(ctx.get()));
  if (ssl == nullptr || SSL_set_fd(ssl.get(), fd.get()) != 1) {
    return OpenSslError("creating a TLS server connection");
  }
  SSL_set_accept_state(ssl.get());
  ServerHandshake hs;
  hs.pick = &pick;
  hs.choose_alpn = &alpn;
  SSL_set_app_data(ssl.get(), &hs);
  std::unique_ptr<TlsServerStream> stream(new TlsServerStream(std::move(fd), std::move(ssl)));
  absl::Status st = stream->Handshake(deadline, "TLS handshake with the client");
  SSL_set_app_data(stream->ssl_.get(), nullptr);
  if (!hs.refusal.empty()) {
    return absl::PermissionDeniedError(absl::StrCat("server name refused: ", hs.refusal));
  }
  LAZ_RETURN_IF_ERROR(st);
  return stream;
}

absl::StatusOr<std::unique_ptr<TlsClientContext>> TlsClientContext::Create(
    const UpstreamTrust& trust) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx == nullptr) return OpenSslError("creating the TLS client context");
  CommonSettings(ctx.get());
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  const int ok = trust.ca_file.empty()
                     ? SSL_CTX_set_default_verify_paths(ctx.get())
                     : SSL_CTX_load_verify_locations(ctx.get(), trust.ca_file.c_str(), nullptr);
  if (ok != 1) return OpenSslError("loading the upstream trust store");
  return std::unique_ptr<TlsClientContext>(new TlsClientContext(std::move(ctx)));
}

absl::StatusOr<std::unique_ptr<TlsClientStream>> TlsClientStream::Connect(
    const TlsClientContext& ctx, fs::UniqueFd fd, const std::string& host,
    const std::vector<std::string>& alpn, absl::Time deadline) {
  LAZ_ASSIGN_OR_RETURN(std::string wire, AlpnWire(alpn));
  LAZ_RETURN_IF_ERROR(SetNonBlocking(fd.get()));
  SslPtr ssl(SSL_new(ctx.get()));
  if (ssl == nullptr || SSL_set_fd(ssl.get(), fd.get()) != 1 ||
      SSL_set_tlsext_host_name(ssl.get(), host.c_str()) != 1 ||
      SSL_set1_host(ssl.get(), host.c_str()) != 1) {
    return OpenSslError("creating a TLS client connection");
  }
  if (!wire.empty() &&
      SSL_set_alpn_protos(ssl.get(), reinterpret_cast<const unsigned char*>(wire.data()),
                          static_cast<unsigned int>(wire.size())) != 0) {
    return OpenSslError("setting ALPN");
  }
  SSL_set_connect_state(ssl.get());
  std::unique_ptr<TlsClientStream> stream(new TlsClientStream(std::move(fd), std::move(ssl)));
  absl::Status st = stream->Handshake(deadline, absl::StrCat("TLS handshake with ", host));
  if (!st.ok()) {
    const long verify = SSL_get_verify_result(stream->ssl_.get());
    if (verify != X509_V_OK) {
      return absl::UnavailableError(absl::StrCat("the certificate of ", host,
                                                 " is not trusted: ",
                                                 X509_verify_cert_error_string(verify)));
    }
    return st;
  }
  return stream;
}

}  // namespace lazaret::egressd
