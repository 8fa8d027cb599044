#include "services/brokerd/tls/test_client.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lazaret::brokerd::tls::testing {
namespace {

std::atomic<int> g_tickets{0};

int CountTicket(SSL* /*ssl*/, SSL_SESSION* /*session*/) {
  g_tickets.fetch_add(1);
  return 0;  // not kept
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Errors() {
  std::string out;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out += buf;
    out += ";";
  }
  return out;
}

bool IsBrokerCertificate(X509* cert) {
  if (cert == nullptr) return false;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  bool ok = false;
  if (names != nullptr && sk_GENERAL_NAME_num(names) == 1) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, 0);
    if (n->type == GEN_URI) {
      const ASN1_IA5STRING* s = n->d.uniformResourceIdentifier;
      ok = std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       ASN1_STRING_length(s)) == "urn:lazaret:broker";
    }
  }
  GENERAL_NAMES_free(names);
  return ok;
}

SslCtxPtr ClientContext(const ClientCredentials& creds, const ClientOptions& options,
                        std::string* error) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(ctx.get(), options.max_version);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
  SSL_CTX_sess_set_new_cb(ctx.get(), &CountTicket);
  auto ca = CertificateFromPem(creds.ca_pem);
  if (!ca.ok()) {
    *error = "bad ca.pem";
    return nullptr;
  }
  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), ca->get());
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (!creds.cert_pem.empty()) {
    auto cert = CertificateFromPem(creds.cert_pem);
    auto key = PrivateKeyFromPem(creds.key_pem);
    if (!cert.ok() || !key.ok() || SSL_CTX_use_certificate(ctx.get(), cert->get()) != 1 ||
        SSL_CTX_use_PrivateKey(ctx.get(), key->get()) != 1) {
      *error = "bad client certificate or key: " + Errors();
      return nullptr;
    }
  }
  return ctx;
}

}  // namespace

ClientCredentials ReadCredentials(const std::string& certs_dir) {
  return {Slurp(certs_dir + "/ca.pem"), Slurp(certs_dir + "/client.pem"),
          Slurp(certs_dir + "/client.key")};
}

ClientResult RunClient(const std::string& path, const ClientCredentials& creds,
                       const std::string& send, const ClientOptions& options) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ClientResult r;
    r.error = std::string("connect: ") + strerror(errno);
    close(fd);
    return r;
  }
  return RunClientOnFd(fd, creds, send, options);
}

ClientResult RunClientOnFd(int fd, const ClientCredentials& creds, const std::string& send,
                           const ClientOptions& options) {
  // A server that refuses closes under the client's write: EPIPE, not death.
  signal(SIGPIPE, SIG_IGN);
  ClientResult r;
  const int tickets_before = g_tickets.load();
  SslCtxPtr ctx = ClientContext(creds, options, &r.error);
  if (ctx == nullptr) {
    close(fd);
    return r;
  }
  SslPtr ssl(SSL_new(ctx.get()));
  SSL_set_fd(ssl.get(), fd);
  if (options.offer_session != nullptr) SSL_set_session(ssl.get(), options.offer_session);
  ERR_clear_error();
  if (SSL_connect(ssl.get()) != 1) {
    r.error = "handshake: " + Errors();
  } else {
    r.handshake_ok = true;
    r.server_cert_is_broker = SSL_get_verify_result(ssl.get()) == X509_V_OK &&
                              IsBrokerCertificate(SSL_get0_peer_certificate(ssl.get()));
    r.reused = SSL_session_reused(ssl.get()) == 1;
    size_t written = 0;
    if (!send.empty() && SSL_write_ex(ssl.get(), send.data(), send.size(), &written) != 1) {
      r.error = "write: " + Errors();
    }
    char buf[4096];
    for (;;) {
      size_t n = 0;
      if (SSL_read_ex(ssl.get(), buf, sizeof(buf), &n) == 1) {
        r.received.append(buf, n);
        continue;
      }
      const int err = SSL_get_error(ssl.get(), 0);
      r.clean_close = err == SSL_ERROR_ZERO_RETURN;
      if (!r.clean_close) r.error += "read: " + Errors();
      break;
    }
    r.session.reset(SSL_get1_session(ssl.get()));
  }
  r.tickets = g_tickets.load() - tickets_before;
  ssl.reset();
  close(fd);
  return r;
}

std::string MakeScratchDir(const std::string& parent, unsigned mode) {
  std::string tmpl = parent + "/laz-tls-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  chmod(tmpl.c_str(), mode);
  return tmpl;
}

void RemoveScratchDir(const std::string& path) {
  if (path.empty()) return;
  (void)!system(("chmod -R u+rwx '" + path + "' 2>/dev/null; rm -rf '" + path + "'").c_str());
}

}  // namespace lazaret::brokerd::tls::testing
