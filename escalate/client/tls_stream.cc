#include "escalate/client/tls_stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "escalate/client/options.h"
#include "services/vocab/profile_name.h"
#include "services/wire/messages.h"
#include "services/wire/strict_json.h"
#include "services/common/fs/fd.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"

namespace lazaret::escalation::client {
namespace {

constexpr uint64_t kMaxPemBytes = 64 * 1024;

// OpenSSL's queued errors, drained, after `what`.
std::string SslErrors(absl::string_view what) {
  std::string msg(what);
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&msg, ": ", buf);
  }
  return msg;
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using UniqueBio = std::unique_ptr<BIO, BioFree>;
using UniqueX509 = std::unique_ptr<X509, X509Free>;

UniqueBio MemBio(const std::string& pem) {
  return UniqueBio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

absl::StatusOr<std::string> ReadPem(const std::string& dir, const char* name) {
  const std::string path = absl::StrCat(dir, "/", name);
  auto pem = fs::ReadHostFile(path, kMaxPemBytes);
  if (!pem.ok() && pem.status().code() == absl::StatusCode::kNotFound) {
    return absl::NotFoundError(absl::StrCat("certificate file ", path, " is missing"));
  }
  return pem;
}

// Every certificate in `pem`, in order; at least one.
absl::StatusOr<std::vector<UniqueX509>> ParseCerts(const std::string& pem, const char* name) {
  UniqueBio bio = MemBio(pem);
  std::vector<UniqueX509> certs;
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(x);
  }
  ERR_clear_error();  // the end of the PEM data reads as an error
  if (certs.empty()) return absl::InvalidArgumentError(absl::StrCat(name, " has no certificate"));
  return certs;
}

// The URIs of the certificate's subjectAltName.
std::vector<std::string> SanUris(X509* cert) {
  std::vector<std::string> uris;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return uris;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_URI) continue;
    const ASN1_STRING* s = name->d.uniformResourceIdentifier;
    uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                      static_cast<size_t>(ASN1_STRING_length(s)));
  }
  GENERAL_NAMES_free(names);
  return uris;
}

// 12 lowercase hex digits (as services/common/session_id.h, which lives in a
// library that pulls gRPC).
bool IsSessionId(absl::string_view id) {
  if (id.size() != 12) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status SetUpContext(SSL_CTX* ctx) {
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
    return absl::InternalError(SslErrors("restricting TLS to 1.3"));
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClientIdentity>> ClientIdentity::Load(const std::string& certs_dir) {
  LAZ_ASSIGN_OR_RETURN(std::string ca_pem, ReadPem(certs_dir, "ca.pem"));
  LAZ_ASSIGN_OR_RETURN(std::string cert_pem, ReadPem(certs_dir, "client.pem"));
  LAZ_ASSIGN_OR_RETURN(std::string key_pem, ReadPem(certs_dir, "client.key"));

  std::unique_ptr<SSL_CTX, CtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx == nullptr) return absl::InternalError(SslErrors("creating the TLS context"));
  LAZ_RETURN_IF_ERROR(SetUpContext(ctx.get()));

  // Only ca.pem is trusted; the system's store is never loaded.
  LAZ_ASSIGN_OR_RETURN(std::vector<UniqueX509> cas, ParseCerts(ca_pem, "ca.pem"));
  X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
  for (const UniqueX509& ca : cas) {
    if (X509_STORE_add_cert(store, ca.get()) != 1) {
      return absl::InvalidArgumentError(SslErrors("trusting ca.pem"));
    }
  }

  LAZ_ASSIGN_OR_RETURN(std::vector<UniqueX509> chain, ParseCerts(cert_pem, "client.pem"));
  if (SSL_CTX_use_certificate(ctx.get(), chain[0].get()) != 1) {
    return absl::InvalidArgumentError(SslErrors("using client.pem"));
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx.get(), chain[i].get()) != 1) {
      return absl::InvalidArgumentError(SslErrors("using client.pem's chain"));
    }
  }
  UniqueBio key_bio = MemBio(key_pem);
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr || SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return absl::InvalidArgumentError(SslErrors("client.key is not the key of client.pem"));
  }

  std::string profile, session_id;
  for (const std::string& uri : SanUris(chain[0].get())) {
    absl::string_view rest(uri);
    if (rest.substr(0, sizeof(kSessionSanPrefix) - 1) != kSessionSanPrefix) continue;
    rest.remove_prefix(sizeof(kSessionSanPrefix) - 1);
    const size_t colon = rest.find(':');
    if (colon == absl::string_view::npos || !vocab::IsValidProfileName(rest.substr(0, colon)) ||
        !IsSessionId(rest.substr(colon + 1))) {
      return absl::InvalidArgumentError(
          absl::StrCat("client.pem names a malformed session: ", QuoteForError(uri)));
    }
    if (!profile.empty()) {
      return absl::InvalidArgumentError("client.pem names more than one session");
    }
    profile = std::string(rest.substr(0, colon));
    session_id = std::string(rest.substr(colon + 1));
  }
  if (profile.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("client.pem carries no SAN URI ", kSessionSanPrefix, "<profile>:<id>"));
  }
  return std::unique_ptr<ClientIdentity>(
      new ClientIdentity(ctx.release(), std::move(profile), std::move(session_id)));
}

ClientIdentity::~ClientIdentity() { SSL_CTX_free(ctx_); }

absl::StatusOr<std::unique_ptr<TlsStream>> TlsStream::Connect(const ClientIdentity& identity,
                                                              const std::string& endpoint,
                                                              Deadline deadline) {
  LAZ_ASSIGN_OR_RETURN(Endpoint where, ParseEndpoint(endpoint));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(where.port);
  inet_pton(AF_INET, where.address.c_str(), &addr.sin_addr);
  fs::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus("creating a socket", errno);
  if (deadline.has_value()) {
    // A blocking connect() waits for the peer's answer; bound it.
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        *deadline - std::chrono::steady_clock::now());
    const int64_t us = std::max<int64_t>(left.count(), 1000);
    timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
    setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  int rc;
  do {
    rc = connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0 && deadline.has_value() && (errno == EAGAIN || errno == EINPROGRESS)) {
    return absl::DeadlineExceededError(absl::StrCat("timed out connecting to ", endpoint));
  }
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach the broker at ", endpoint, ": ", std::strerror(errno)));
  }
  if (fcntl(fd.get(), F_SETFL, O_NONBLOCK) != 0) return ErrnoStatus("O_NONBLOCK", errno);

  SSL* ssl = SSL_new(identity.ctx());
  if (ssl == nullptr) return absl::InternalError(SslErrors("creating a TLS connection"));
  std::unique_ptr<TlsStream> stream(new TlsStream(fd.release(), ssl, deadline));
  if (SSL_set_fd(ssl, stream->fd_) != 1) {
    return absl::InternalError(SslErrors("attaching TLS to the socket"));
  }
  while (true) {
    errno = 0;
    const int ret = SSL_connect(ssl);
    if (ret == 1) break;
    const int saved_errno = errno;
    const int err = SSL_get_error(ssl, ret);
    // The relay accepts first and then connects to the broker's socket; when
    // it cannot, it resets the connection before the broker said anything.
    // Not one byte from the peer: nobody answered, which is "unreachable",
    // not a failed handshake.
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE &&
        BIO_number_read(SSL_get_rbio(ssl)) == 0) {
      ERR_clear_error();
      return absl::UnavailableError(absl::StrCat(
          "cannot reach the broker at ", endpoint, ": the connection ",
          saved_errno == ECONNRESET ? "was reset" : "closed", " before the broker answered"));
    }
    errno = saved_errno;
    LAZ_RETURN_IF_ERROR(stream->Wait(ret, "the TLS handshake with the broker"));
  }
  X509* peer = SSL_get0_peer_certificate(ssl);
  if (peer == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    return absl::UnauthenticatedError("the broker's certificate does not chain to ca.pem");
  }
  bool is_broker = false;
  for (const std::string& uri : SanUris(peer)) is_broker = is_broker || uri == kBrokerSanUri;
  if (!is_broker) {
    return absl::UnauthenticatedError(
        absl::StrCat("the peer's certificate lacks the SAN URI ", kBrokerSanUri));
  }
  return stream;
}

TlsStream::~TlsStream() {
  SSL_free(ssl_);
  close(fd_);
}

absl::Status TlsStream::Wait(int ret, const char* what) {
  const int err = SSL_get_error(ssl_, ret);
  short events;
  if (err == SSL_ERROR_WANT_READ) {
    events = POLLIN;
  } else if (err == SSL_ERROR_WANT_WRITE) {
    events = POLLOUT;
  } else if (err == SSL_ERROR_SYSCALL && errno != 0) {
    return absl::DataLossError(absl::StrCat(what, ": ", std::strerror(errno)));
  } else {
    return absl::UnauthenticatedError(SslErrors(absl::StrCat(what, " failed")));
  }
  while (true) {
    int timeout_ms = -1;
    if (deadline_.has_value()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *deadline_ - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return absl::DeadlineExceededError(absl::StrCat("timed out during ", what));
      }
      timeout_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30));
    }
    pollfd p{fd_, events, 0};
    const int n = poll(&p, 1, timeout_ms);
    if (n > 0) return absl::OkStatus();
    if (n < 0 && errno != EINTR) return ErrnoStatus("poll", errno);
  }
}

absl::StatusOr<size_t> TlsStream::Read(void* buf, size_t len) {
  while (true) {
    size_t got = 0;
    errno = 0;
    const int ret = SSL_read_ex(ssl_, buf, len, &got);
    if (ret == 1) return got;
    if (SSL_get_error(ssl_, ret) == SSL_ERROR_ZERO_RETURN) return 0;
    LAZ_RETURN_IF_ERROR(Wait(ret, "reading from the broker"));
  }
}

absl::Status TlsStream::WriteAll(const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    size_t put = 0;
    errno = 0;
    const int ret = SSL_write_ex(ssl_, p, len, &put);
    if (ret == 1) {
      p += put;
      len -= put;
      continue;
    }
    LAZ_RETURN_IF_ERROR(Wait(ret, "writing to the broker"));
  }
  return absl::OkStatus();
}

}  // namespace lazaret::escalation::client
