#include "escalate/client/test_broker.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/wire/frame.h"
#include "services/wire/messages.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"

namespace lazaret::escalation::testing {
namespace {

absl::Status SslError(absl::string_view what) {
  std::string msg(what);
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    absl::StrAppend(&msg, ": ", buf);
  }
  return absl::InternalError(msg);
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return SslError(absl::StrCat("extension ", value));
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok == 1 ? absl::OkStatus() : SslError("X509_add_ext");
}

// A certificate for `key`, issued by `issuer` (itself when null).
absl::StatusOr<X509*> MakeCert(EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                               const std::vector<std::pair<int, std::string>>& extensions,
                               long not_before, long not_after) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  BIGNUM* serial = BN_new();
  BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert));
  BN_free(serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), not_before);
  X509_gmtime_adj(X509_getm_notAfter(cert), not_after);
  X509_set_pubkey(cert, key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(issuer ? "leaf" : "test ca"),
                             -1, -1, 0);
  X509_set_issuer_name(cert, X509_get_subject_name(issuer ? issuer : cert));
  for (const auto& [nid, value] : extensions) {
    if (absl::Status s = AddExtension(cert, issuer ? issuer : cert, nid, value); !s.ok()) {
      X509_free(cert);
      return s;
    }
  }
  if (X509_sign(cert, issuer_key, EVP_sha256()) == 0) {
    X509_free(cert);
    return SslError("X509_sign");
  }
  return cert;
}

std::string ToPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  return pem;
}

std::string ToPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  return pem;
}

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

}  // namespace

absl::StatusOr<std::unique_ptr<TestCa>> TestCa::Create() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) return SslError("EVP_EC_gen");
  auto cert = MakeCert(key, nullptr, key,
                       {{NID_basic_constraints, "critical,CA:TRUE"},
                        {NID_key_usage, "critical,keyCertSign,cRLSign"},
                        {NID_subject_key_identifier, "hash"}},
                       -60, 3600);
  if (!cert.ok()) {
    EVP_PKEY_free(key);
    return cert.status();
  }
  return std::unique_ptr<TestCa>(new TestCa(*cert, key));
}

TestCa::~TestCa() {
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

std::string TestCa::ca_pem() const { return ToPem(cert_); }

absl::StatusOr<PemPair> TestCa::Issue(const std::vector<std::string>& san_uris, bool server,
                                      long not_before_offset, long not_after_offset) const {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) return SslError("EVP_EC_gen");
  std::vector<std::pair<int, std::string>> extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, server ? "serverAuth" : "clientAuth"},
      {NID_authority_key_identifier, "keyid:always"}};
  if (!san_uris.empty()) {
    std::vector<std::string> parts;
    for (const std::string& uri : san_uris) parts.push_back(absl::StrCat("URI:", uri));
    extensions.emplace_back(NID_subject_alt_name, absl::StrJoin(parts, ","));
  }
  auto cert = MakeCert(key, cert_, key_, extensions, not_before_offset, not_after_offset);
  if (!cert.ok()) {
    EVP_PKEY_free(key);
    return cert.status();
  }
  PemPair pair{ToPem(*cert), ToPem(key)};
  X509_free(*cert);
  EVP_PKEY_free(key);
  return pair;
}

absl::Status WriteClientCerts(const std::string& dir, const std::string& ca_pem,
                              const PemPair& client) {
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomic(absl::StrCat(dir, "/ca.pem"), ca_pem, 0600));
  LAZ_RETURN_IF_ERROR(fs::WriteFileAtomic(absl::StrCat(dir, "/client.pem"), client.cert, 0600));
  return fs::WriteFileAtomic(absl::StrCat(dir, "/client.key"), client.key, 0600);
}

TestBrokerConnection::~TestBrokerConnection() {
  SSL_free(ssl_);
  close(fd_);
}

absl::StatusOr<size_t> TestBrokerConnection::Read(void* buf, size_t len) {
  size_t got = 0;
  if (SSL_read_ex(ssl_, buf, len, &got) == 1) return got;
  if (SSL_get_error(ssl_, 0) == SSL_ERROR_ZERO_RETURN) return 0;
  return SslError("test broker read");
}

absl::Status TestBrokerConnection::WriteAll(const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    size_t put = 0;
    if (SSL_write_ex(ssl_, p, len, &put) != 1) return SslError("test broker write");
    p += put;
    len -= put;
  }
  return absl::OkStatus();
}

absl::Status TestBrokerConnection::Send(const v1::ServerFrame& frame) {
  return WriteFrame(*this, SerializeServerFrame(frame));
}

void TestBrokerConnection::CloseCleanly() { SSL_shutdown(ssl_); }

std::vector<std::string> TestBrokerConnection::PeerSanUris() const {
  X509* peer = SSL_get0_peer_certificate(ssl_);
  return peer ? SanUris(peer) : std::vector<std::string>{};
}

absl::StatusOr<std::unique_ptr<TestBroker>> TestBroker::Start(const std::string& ca_pem,
                                                              const PemPair& server,
                                                              Handler handler) {
  // A client that has gone must fail a write, not kill the test process.
  signal(SIGPIPE, SIG_IGN);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  BIO* ca_bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(ca_bio, nullptr, nullptr, nullptr);
  BIO_free(ca_bio);
  BIO* cert_bio = BIO_new_mem_buf(server.cert.data(), static_cast<int>(server.cert.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  BIO* key_bio = BIO_new_mem_buf(server.key.data(), static_cast<int>(server.key.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  const bool ok = ca != nullptr && cert != nullptr && key != nullptr &&
                  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca) == 1 &&
                  SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1;
  X509_free(ca);
  X509_free(cert);
  EVP_PKEY_free(key);
  if (!ok) {
    SSL_CTX_free(ctx);
    return SslError("test broker certificates");
  }

  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    close(fd);
    SSL_CTX_free(ctx);
    return ErrnoStatus("listening on 127.0.0.1", err);
  }
  std::unique_ptr<TestBroker> broker(
      new TestBroker(fd, ntohs(addr.sin_port), ctx, std::move(handler)));
  broker->thread_ = std::thread([b = broker.get()] { b->Serve(); });
  return broker;
}

std::string TestBroker::endpoint() const { return absl::StrCat("127.0.0.1:", port_); }

TestBroker::~TestBroker() {
  shutdown(listen_fd_, SHUT_RDWR);  // wakes accept() with EINVAL
  thread_.join();
  close(listen_fd_);
  SSL_CTX_free(ctx_);
}

void TestBroker::Serve() {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;
    }
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    TestBrokerConnection connection(fd, ssl);
    if (SSL_accept(ssl) != 1) {
      ERR_clear_error();
      std::lock_guard<std::mutex> lock(mu_);
      ++failed_handshakes_;
      continue;
    }
    absl::StatusOr<v1::EscalateRequest> request = absl::UnknownError("no frame");
    auto payload = ReadFrame(connection, kMaxRequestFrame);
    request = payload.ok() ? ParseRequest(*payload) : payload.status();
    if (request.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(*request);
    }
    handler_(request, connection);
  }
}

std::vector<v1::EscalateRequest> TestBroker::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int TestBroker::failed_handshakes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_handshakes_;
}

v1::ServerFrame ResultFrame(const v1::EscalateResponse& response) {
  v1::ServerFrame frame;
  *frame.mutable_result() = response;
  return frame;
}

}  // namespace lazaret::escalation::testing
