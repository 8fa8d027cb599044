// The host's CA trust end to end (trust_host_ca): a TLS test host behind
// the gateway (the "pub" test host, at kPublicV4:7443) serves a certificate
// of a CA the test makes, which only the store `lazaret run` is given
// trusts (SSL_CERT_FILE = the system bundle plus that CA, so the host's own
// store is never changed). With trust_host_ca = true, git inside (GnuTLS,
// GIT_SSL_CAINFO) gets past TLS to the server's HTTP answer, and the
// variables name the bundle and the host file; without it, git refuses
// the server's certificate; a workspace file that tries to turn it on is a
// configuration error. Part of net_e2e_test (same binary); runs as root.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/net_e2e_fixture.h"

namespace lazaret::test::e2e::net {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint16_t kTlsPort = 7443;
constexpr char kCaProfile[] = "netca";
constexpr char kNoCaProfile[] = "netnoca";

std::string Pem(X509* x) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, x);
  char* p = nullptr;
  const long n = BIO_get_mem_data(b, &p);
  std::string out(p, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* NewCert(const char* cn, EVP_PKEY* key, long serial) {
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_set_pubkey(x, key);
  return x;
}

// A CA of the test's own and a server certificate it signed for the TLS
// test host (by address and by name).
struct TestPki {
  EVP_PKEY* ca_key = nullptr;
  X509* ca = nullptr;
  EVP_PKEY* server_key = nullptr;
  X509* server = nullptr;
  TestPki() {
    ca_key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    ca = NewCert("Lazaret e2e test CA", ca_key, 1);
    X509_set_issuer_name(ca, X509_get_subject_name(ca));
    AddExtension(ca, ca, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExtension(ca, ca, NID_subject_key_identifier, "hash");
    X509_sign(ca, ca_key, EVP_sha256());
    server_key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    server = NewCert("tls.lzt.test", server_key, 2);
    X509_set_issuer_name(server, X509_get_subject_name(ca));
    AddExtension(server, ca, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(server, ca, NID_ext_key_usage, "serverAuth");
    AddExtension(server, ca, NID_subject_alt_name,
                 absl::StrCat("IP:", kPublicV4, ",DNS:tls.lzt.test").c_str());
    X509_sign(server, ca_key, EVP_sha256());
  }
  ~TestPki() {
    X509_free(server);
    EVP_PKEY_free(server_key);
    X509_free(ca);
    EVP_PKEY_free(ca_key);
  }
};

// An HTTPS server on one socket created inside a test host's namespace:
// it completes TLS handshakes with the test PKI's server certificate,
// answers every request "404", and counts the connections it accepted and
// the HTTP requests it read. A client that refuses the certificate may do
// so after the handshake (curl's GnuTLS backend, which git uses, verifies
// then), so only a request proves it trusted the server.
class TlsServer {
 public:
  static absl::StatusOr<std::unique_ptr<TlsServer>> Start(const TestHost& host,
                                                          const TestPki& pki) {
    // A client that gives up mid-handshake must not end the test process.
    signal(SIGPIPE, SIG_IGN);
    std::unique_ptr<TlsServer> s(new TlsServer());
    s->ctx_ = SSL_CTX_new(TLS_server_method());
    if (s->ctx_ == nullptr || SSL_CTX_use_certificate(s->ctx_, pki.server) != 1 ||
        SSL_CTX_use_PrivateKey(s->ctx_, pki.server_key) != 1) {
      return absl::InternalError("the TLS server's context could not be set up");
    }
    absl::Status bound = absl::InternalError("not run");
    absl::Status inside = host.RunInside([&] {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(kTlsPort);
      inet_pton(AF_INET, kPublicV4, &a.sin_addr);
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
          listen(fd, 16) != 0) {
        bound = absl::InternalError(
            absl::StrCat("listening on ", kPublicV4, ":", kTlsPort, ": ", strerror(errno)));
        if (fd >= 0) close(fd);
        return;
      }
      s->listen_ = fd;
      bound = absl::OkStatus();
    });
    if (!inside.ok()) return inside;
    if (!bound.ok()) return bound;
    s->stop_ = eventfd(0, EFD_CLOEXEC);
    s->thread_ = std::thread([p = s.get()] { p->Serve(); });
    return s;
  }
  ~TlsServer() {
    if (thread_.joinable()) {
      const uint64_t one = 1;
      (void)!write(stop_, &one, sizeof(one));
      thread_.join();
    }
    if (listen_ >= 0) close(listen_);
    if (stop_ >= 0) close(stop_);
    SSL_CTX_free(ctx_);
  }
  int connections() const { return connections_.load(); }
  int requests() const { return requests_.load(); }

 private:
  TlsServer() = default;

  void Serve() {
    for (;;) {
      pollfd fds[2] = {{listen_, POLLIN, 0}, {stop_, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) continue;
      if (fds[1].revents != 0) return;
      const int c = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      timeval tv{5, 0};
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) == 1) {
        std::string request;
        char buf[4096];
        while (request.size() < 64 * 1024 && request.find("\r\n\r\n") == std::string::npos) {
          const int n = SSL_read(ssl, buf, sizeof(buf));
          if (n <= 0) break;
          request.append(buf, static_cast<size_t>(n));
        }
        if (request.find("\r\n\r\n") != std::string::npos) ++requests_;
        static constexpr char kAnswer[] =
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        SSL_write(ssl, kAnswer, sizeof(kAnswer) - 1);
        SSL_shutdown(ssl);
      }
      ERR_clear_error();
      SSL_free(ssl);
      close(c);
    }
  }

  SSL_CTX* ctx_ = nullptr;
  int listen_ = -1;
  int stop_ = -1;
  std::thread thread_;
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
};

// What runs inside: the variables, whether the bundle holds the test CA
// (a line of its base64 only it has), and git over TLS to the test host.
std::string Script(const std::string& ca_line) {
  return absl::StrCat(
      "for v in NODE_EXTRA_CA_CERTS SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE "
      "GIT_SSL_CAINFO PIP_CERT; do eval \"echo var $v=\\${$v}\"; done; "
      "if [ -n \"$SSL_CERT_FILE\" ]; then echo \"bundle-has-ca $(grep -c -F -- '",
      ca_line, "' \"$SSL_CERT_FILE\")\"; fi; ", "git -c http.lowSpeedTime=20 ls-remote https://",
      kPublicV4, ":", kTlsPort, "/x.git 2>&1; echo \"git-exit $?\"");
}

class NetCaTest : public NetE2eTest {
 protected:
  void SetUp() override {
    NetE2eTest::SetUp();
    if (HasFatalFailure()) return;
    const TestHost* pub = W().hosts().Find("pub");
    ASSERT_NE(pub, nullptr) << "the test world has no gateway-routed host 'pub'";
    absl::StatusOr<std::unique_ptr<TlsServer>> server = TlsServer::Start(*pub, pki_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    // The store `lazaret run` reads: the system's public roots and the
    // test CA.
    const std::string system = test::ReadFile("/etc/ssl/certs/ca-certificates.crt");
    ASSERT_FALSE(system.empty());
    store_dir_ = std::make_unique<UserDir>("netca-store");
    store_ = store_dir_->Write("store.pem", system + Pem(pki_.ca));
  }
  void TearDown() override { server_.reset(); }

  // `lazaret run PROFILE -- sh -c SCRIPT`, reading the test store.
  CommandResult Run(const std::string& profile) {
    const std::vector<std::string> lines = absl::StrSplit(Pem(pki_.ca), '\n');
    EXPECT_GT(lines.size(), 3u);
    const std::string ca_line = lines.size() > 3 ? lines[lines.size() - 3] : "";
    return Lazaret(W().Workspace(profile),
                   {"run", "--config", W().config(), profile, "--", "sh", "-c", Script(ca_line)},
                   {{"SSL_CERT_FILE", store_}});
  }

  TestPki pki_;
  std::unique_ptr<TlsServer> server_;
  std::unique_ptr<UserDir> store_dir_;
  std::string store_;
};

// One test, so the profiles are added once and the runs share the server.
TEST_F(NetCaTest, HostCaTrustedOnlyWhenTheProfileAsksAndNeverFromTheWorkspace) {
  ASSERT_TRUE(W().AddProfile(kCaProfile, "egress = \"open\"\ntrust_host_ca = true\n").ok());
  ASSERT_TRUE(W().AddProfile(kNoCaProfile, "egress = \"open\"\n").ok());

  // trust_host_ca = true: git verifies the test host's certificate against
  // the bundle and reaches its HTTP answer (404).
  CommandResult on = Run(kCaProfile);
  EXPECT_THAT(on.out, HasSubstr("var NODE_EXTRA_CA_CERTS=/run/lazaret/ca/host.pem"));
  for (const char* v :
       {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT"}) {
    EXPECT_THAT(on.out, HasSubstr(absl::StrCat("var ", v, "=/run/lazaret/ca-bundle/bundle.pem")))
        << on.out << on.err;
  }
  EXPECT_THAT(on.out, HasSubstr("bundle-has-ca 1")) << on.out << on.err;
  EXPECT_THAT(on.out, Not(HasSubstr("certificate"))) << on.out;
  EXPECT_THAT(on.out, HasSubstr("not found")) << on.out << on.err;
  EXPECT_GE(server_->requests(), 1) << on.out << on.err;

  // Without it: nothing of the host's store inside, and git refuses the
  // server's certificate (after reaching it) and sends no request.
  const int connections = server_->connections();
  const int requests = server_->requests();
  CommandResult off = Run(kNoCaProfile);
  EXPECT_THAT(off.out, HasSubstr("var SSL_CERT_FILE=\n")) << off.out << off.err;
  EXPECT_THAT(off.out, HasSubstr("var NODE_EXTRA_CA_CERTS=\n")) << off.out;
  EXPECT_THAT(off.out, HasSubstr("verification failed")) << off.out << off.err;
  EXPECT_THAT(off.out, Not(HasSubstr("git-exit 0"))) << off.out;
  EXPECT_GT(server_->connections(), connections) << "the client reached the server";
  EXPECT_EQ(server_->requests(), requests) << off.out;

  // A workspace file (untrusted: the agent can write it) may not turn it
  // on: the run is refused before any sandbox starts.
  const int connections_before = server_->connections();
  const std::string ws_file = absl::StrCat(W().Workspace(kNoCaProfile), "/lazaret.toml");
  CommandResult write = RunAs("/", {"sh", "-c",
                                    absl::StrCat("printf '[profiles.", kNoCaProfile,
                                                 "]\\ntrust_host_ca = true\\n' > ", ws_file)});
  ASSERT_EQ(write.exit_code, 0) << write.err;
  CommandResult widened = Run(kNoCaProfile);
  (void)unlink(ws_file.c_str());
  EXPECT_NE(widened.exit_code, 0) << widened.out;
  EXPECT_THAT(widened.err, HasSubstr("trust_host_ca")) << widened.err;
  EXPECT_THAT(widened.out, Not(HasSubstr("git-exit"))) << "no sandbox ran";
  EXPECT_EQ(server_->connections(), connections_before) << "no sandbox ran";
}

}  // namespace
}  // namespace lazaret::test::e2e::net
