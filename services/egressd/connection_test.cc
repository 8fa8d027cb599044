#include "services/egressd/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_support.h"

namespace lazaret::egressd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kConnHost[] = "api.example.com";
constexpr char kOtherHost[] = "other.example.com";
constexpr char kConnPlaceholder[] = "lzs-0123456789abcdef0123456789abcdef";
constexpr char kConnSecretValue[] = "sk-REAL-SECRET-VALUE-42";

// As in the service (service_main): a peer gone is a write error, not the
// process's death (OpenSSL writes to its socket with write(2)).
const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

// A listening TCP socket on 127.0.0.1 with an ephemeral port.
int Listen(uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(fd, 16), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int ConnectLoopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Accept loop on a listening socket until Stop: each connection goes to
// `serve` on its own thread. A shutdown(2) of the listening socket wakes
// accept.
class Acceptor {
 public:
  explicit Acceptor(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
    listen_fd_ = Listen(&port_);
    thread_ = std::thread([this] {
      while (true) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) break;
        std::lock_guard<std::mutex> lock(mu_);
        workers_.emplace_back([this, fd] { serve_(fd); });
      }
    });
  }
  ~Acceptor() {
    shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    close(listen_fd_);
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : workers_) t.join();
  }
  uint16_t port() const { return port_; }

 private:
  std::function<void(int fd)> serve_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

// The test's stand-in for a vendor API: a tiny blocking OpenSSL server
// with a leaf of its own test CA, answering each HTTP/1.1 request with a
// body that echoes the request head it received.
class EchoUpstream {
 public:
  EchoUpstream() {
    ca_ = *SessionCa::Create("upstream-test", {kConnHost, kOtherHost});
    ca_file_ = dir_.path() + "/upstream-ca.pem";
    std::ofstream(ca_file_) << ca_->CaPem();
    ctx_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_tlsext_servername_callback(ctx_, &EchoUpstream::OnName);
    SSL_CTX_set_tlsext_servername_arg(ctx_, this);
    acceptor_ = std::make_unique<Acceptor>([this](int fd) { Serve(fd); });
  }
  ~EchoUpstream() {
    acceptor_.reset();
    SSL_CTX_free(ctx_);
  }
  uint16_t port() const { return acceptor_->port(); }
  const std::string& ca_file() const { return ca_file_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  static int OnName(SSL* ssl, int*, void* arg) {
    auto* self = static_cast<EchoUpstream*>(arg);
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    auto leaf = self->ca_->LeafFor(name != nullptr ? name : kConnHost);
    if (!leaf.ok()) return SSL_TLSEXT_ERR_ALERT_FATAL;
    SSL_use_certificate(ssl, (*leaf)->cert.get());
    SSL_use_PrivateKey(ssl, (*leaf)->key.get());
    return SSL_TLSEXT_ERR_OK;
  }

  void Serve(int fd) {
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      std::string buf;
      char tmp[16384];
      while (true) {
        const size_t end = buf.find("\r\n\r\n");
        if (end == std::string::npos) {
          const int n = SSL_read(ssl, tmp, sizeof(tmp));
          if (n <= 0) break;
          buf.append(tmp, static_cast<size_t>(n));
          continue;
        }
        std::string head = buf.substr(0, end + 4);
        size_t len = 0;
        const std::string lower = absl::AsciiStrToLower(head);
        const size_t cl = lower.find("content-length: ");
        if (cl != std::string::npos) {
          (void)absl::SimpleAtoi(lower.substr(cl + 16, lower.find("\r\n", cl) - cl - 16), &len);
        }
        while (buf.size() < end + 4 + len) {
          const int n = SSL_read(ssl, tmp, sizeof(tmp));
          if (n <= 0) break;
          buf.append(tmp, static_cast<size_t>(n));
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          requests_.push_back(head);
        }
        buf.erase(0, std::min(buf.size(), end + 4 + len));
        const std::string response = absl::StrCat(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ", head.size(),
            "\r\n\r\n", head);
        if (SSL_write(ssl, response.data(), static_cast<int>(response.size())) <= 0) break;
      }
    }
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
  }

  test::TempDir dir_;
  std::unique_ptr<SessionCa> ca_;
  std::string ca_file_;
  SSL_CTX* ctx_ = nullptr;
  std::unique_ptr<Acceptor> acceptor_;
  std::mutex mu_;
  std::vector<std::string> requests_;
};

// Dials the test upstream whatever the host; records what was asked.
class LoopbackDialer : public UpstreamDialer {
 public:
  explicit LoopbackDialer(uint16_t port) : port_(port) {}
  absl::StatusOr<fs::UniqueFd> Dial(const std::string& host, uint16_t port) override {
    std::lock_guard<std::mutex> lock(mu_);
    dialed_.push_back(absl::StrCat(host, ":", port));
    const int fd = ConnectLoopback(port_);
    if (fd < 0) return absl::UnavailableError(absl::StrCat("connecting to ", host, ":", port));
    return fs::UniqueFd(fd);
  }
  std::vector<std::string> dialed() {
    std::lock_guard<std::mutex> lock(mu_);
    return dialed_;
  }

 private:
  uint16_t port_;
  std::mutex mu_;
  std::vector<std::string> dialed_;
};

struct ClientResult {
  bool handshake_ok = false;
  std::string response;
};

class ConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SecretSpec s;
    s.name = "vendor";
    s.placeholder = kConnPlaceholder;
    s.value = kConnSecretValue;
    s.hosts = {kConnHost};
    s.header = "x-api-key";
    guard_ = std::make_unique<RequestGuard>(
        std::vector<SecretSpec>{s},
        std::vector<vocab::HttpRule>{{.host = kOtherHost, .allow = {{"*", "/"}}}});
    ca_ = *SessionCa::Create("test", {kConnHost, kOtherHost});
    session_ca_file_ = dir_.path() + "/session-ca.pem";
    std::ofstream(session_ca_file_) << ca_->CaPem();
    dialer_ = std::make_unique<LoopbackDialer>(upstream_.port());
    ctx_.guard = guard_.get();
    ctx_.ca = ca_.get();
    ctx_.dialer = dialer_.get();
    ctx_.log = [this](RequestRecord r) {
      std::lock_guard<std::mutex> lock(mu_);
      records_.push_back(std::move(r));
    };
    ctx_.trust = {.ca_file = upstream_.ca_file()};
    proxy_ = std::make_unique<Acceptor>(
        [this](int fd) { ServeConnection(fs::UniqueFd(fd), kHttpsPort, ctx_); });
  }
  void TearDown() override { proxy_.reset(); }

  // A blocking OpenSSL client that trusts the session CA only: connects to
  // the proxy with SNI `sni`, sends `request`, reads to the end.
  ClientResult Fetch(const std::string& sni, const std::string& request) {
    ClientResult result;
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx, session_ca_file_.c_str(), nullptr);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    SSL* ssl = SSL_new(ctx);
    const int fd = ConnectLoopback(proxy_->port());
    SSL_set_fd(ssl, fd);
    if (!sni.empty()) {
      SSL_set_tlsext_host_name(ssl, sni.c_str());
      SSL_set1_host(ssl, sni.c_str());
    }
    static const unsigned char kAlpn[] = "\x08http/1.1";
    SSL_set_alpn_protos(ssl, kAlpn, sizeof(kAlpn) - 1);
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (SSL_connect(ssl) == 1) {
      result.handshake_ok = true;
      SSL_write(ssl, request.data(), static_cast<int>(request.size()));
      char buf[16384];
      while (true) {
        const int n = SSL_read(ssl, buf, sizeof(buf));
        if (n <= 0) break;
        result.response.append(buf, static_cast<size_t>(n));
      }
    }
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return result;
  }

  std::vector<RequestRecord> Records() {
    // A record is written when its connection's request ends; the client
    // may read the response a moment before.
    test::WaitFor(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return !records_.empty();
        },
        std::chrono::seconds(5));
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

  test::TempDir dir_;
  EchoUpstream upstream_;
  std::unique_ptr<RequestGuard> guard_;
  std::unique_ptr<SessionCa> ca_;
  std::string session_ca_file_;
  std::unique_ptr<LoopbackDialer> dialer_;
  ConnectionContext ctx_;
  std::unique_ptr<Acceptor> proxy_;
  std::mutex mu_;
  std::vector<RequestRecord> records_;
};

TEST_F(ConnectionTest, InjectsOverRealTlsAndRedactsTheEcho) {
  ClientResult r = Fetch(kConnHost, absl::StrCat("GET /v1/models HTTP/1.1\r\nHost: ", kConnHost,
                                                 "\r\nx-api-key: ", kConnPlaceholder,
                                                 "\r\nConnection: close\r\n\r\n"));
  ASSERT_TRUE(r.handshake_ok);
  EXPECT_THAT(r.response, StartsWith("HTTP/1.1 200 OK\r\n"));
  // The upstream saw the real value ...
  const std::vector<std::string> seen = upstream_.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_THAT(seen[0], HasSubstr(absl::StrCat("x-api-key: ", kConnSecretValue, "\r\n")));
  // ... and echoed it, but the client got it masked.
  EXPECT_THAT(r.response, Not(HasSubstr(kConnSecretValue)));
  EXPECT_THAT(r.response,
              HasSubstr(absl::StrCat("x-api-key: ", RedactionMask(sizeof(kConnSecretValue) - 1))));
  EXPECT_THAT(dialer_->dialed(), ElementsAre("api.example.com:443"));
  const std::vector<RequestRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].host, kConnHost);
  EXPECT_EQ(records[0].status, 200);
  EXPECT_THAT(records[0].secrets, ElementsAre("vendor"));
  EXPECT_EQ(records[0].refused, "");
}

TEST_F(ConnectionTest, PlaceholderToAnotherHostIsRefusedWith403) {
  ClientResult r = Fetch(kOtherHost, absl::StrCat("POST /collect HTTP/1.1\r\nHost: ", kOtherHost,
                                                  "\r\nx-api-key: ", kConnPlaceholder,
                                                  "\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_TRUE(r.handshake_ok);
  EXPECT_THAT(r.response, StartsWith("HTTP/1.1 403 Forbidden\r\n"));
  EXPECT_THAT(r.response, HasSubstr("Content-Type: text/plain"));
  EXPECT_THAT(r.response, HasSubstr("secret \"vendor\""));
  EXPECT_THAT(r.response, HasSubstr("only sent to api.example.com"));
  EXPECT_THAT(r.response, HasSubstr("profiles.<profile>.secrets.vendor.hosts"));
  EXPECT_TRUE(upstream_.requests().empty());
  EXPECT_TRUE(dialer_->dialed().empty());
  const std::vector<RequestRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].status, 403);
  EXPECT_EQ(records[0].rule, "secret \"vendor\" is not sent to other.example.com");
}

TEST_F(ConnectionTest, ServerNameNotInterceptedIsRefusedAndLogged) {
  ClientResult r = Fetch("www.example.net", "GET / HTTP/1.1\r\nHost: www.example.net\r\n\r\n");
  EXPECT_FALSE(r.handshake_ok);
  const std::vector<RequestRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].host, "www.example.net");
  EXPECT_THAT(records[0].refused, HasSubstr("www.example.net is not intercepted"));
  EXPECT_TRUE(dialer_->dialed().empty());
}

TEST_F(ConnectionTest, MissingServerNameIsRefusedAndLogged) {
  ClientResult r = Fetch("", absl::StrCat("GET / HTTP/1.1\r\nHost: ", kConnHost, "\r\n\r\n"));
  EXPECT_FALSE(r.handshake_ok);
  const std::vector<RequestRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_THAT(records[0].refused, HasSubstr("no server name"));
  EXPECT_TRUE(dialer_->dialed().empty());
}

TEST_F(ConnectionTest, HostAndServerNameMismatchIs421) {
  ClientResult r =
      Fetch(kConnHost, absl::StrCat("GET / HTTP/1.1\r\nHost: ", kOtherHost, "\r\n\r\n"));
  ASSERT_TRUE(r.handshake_ok);
  EXPECT_THAT(r.response, StartsWith("HTTP/1.1 421 "));
  EXPECT_TRUE(dialer_->dialed().empty());
}

TEST_F(ConnectionTest, UpstreamNotTrustedIs502) {
  // A proxy whose upstream trust store is the session CA (not the
  // upstream's): the upstream certificate fails verification.
  ConnectionContext ctx = ctx_;
  ctx.log = nullptr;
  ctx.trust = {.ca_file = session_ca_file_};
  Acceptor proxy([&](int fd) { ServeConnection(fs::UniqueFd(fd), kHttpsPort, ctx); });
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(cctx, session_ca_file_.c_str(), nullptr);
  SSL* ssl = SSL_new(cctx);
  const int fd = ConnectLoopback(proxy.port());
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, kConnHost);
  ASSERT_EQ(SSL_connect(ssl), 1);
  const std::string req = absl::StrCat("GET / HTTP/1.1\r\nHost: ", kConnHost, "\r\n\r\n");
  SSL_write(ssl, req.data(), static_cast<int>(req.size()));
  std::string response;
  char buf[4096];
  for (int n; (n = SSL_read(ssl, buf, sizeof(buf))) > 0;) response.append(buf, n);
  SSL_free(ssl);
  SSL_CTX_free(cctx);
  close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 502 "));
  EXPECT_THAT(response, HasSubstr("is not trusted"));
}

TEST_F(ConnectionTest, PlainPortNeverSendsASecret) {
  Acceptor plain([&](int fd) { ServeConnection(fs::UniqueFd(fd), kHttpPort, ctx_); });
  const int fd = ConnectLoopback(plain.port());
  const std::string req = absl::StrCat("GET / HTTP/1.1\r\nHost: ", kConnHost,
                                       "\r\nx-api-key: ", kConnPlaceholder, "\r\n\r\n");
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, n);
  close(fd);
  EXPECT_THAT(response, StartsWith("HTTP/1.1 403 "));
  EXPECT_TRUE(dialer_->dialed().empty());
}

// The real curl against the proxy, trusting only the session CA.
TEST_F(ConnectionTest, CurlThroughTheProxy) {
  const std::string port = absl::StrCat(proxy_->port());
  test::CommandResult r =
      test::Run({"curl", "-sS", "--http1.1", "--max-time", "20", "--cacert", session_ca_file_,
                 "--resolve", absl::StrCat(kConnHost, ":", port, ":127.0.0.1"), "-H",
                 absl::StrCat("x-api-key: ", kConnPlaceholder),
                 absl::StrCat("https://", kConnHost, ":", port, "/v1/messages")},
                {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("GET /v1/messages HTTP/1.1\r\n"));
  EXPECT_THAT(r.out, Not(HasSubstr(kConnSecretValue)));
  EXPECT_THAT(r.out, Not(HasSubstr(kConnPlaceholder)));
  const std::vector<std::string> seen = upstream_.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_THAT(seen[0], HasSubstr(absl::StrCat("x-api-key: ", kConnSecretValue)));
  EXPECT_THAT(seen[0], HasSubstr(absl::StrCat("Host: ", kConnHost, ":", port)));
}

}  // namespace
}  // namespace lazaret::egressd

namespace lazaret::egressd {
namespace {

// An HTTP/2 client (curl's default ALPN offers h2 first) of a host whose
// upstream speaks HTTP/1.1 only: once the proxy has seen that, it offers
// the client HTTP/1.1, and the request goes through.
TEST_F(ConnectionTest, Http2ClientOfAnHttp1OnlyUpstreamFallsBackToHttp1) {
  const std::string port = absl::StrCat(proxy_->port());
  auto curl = [&] {
    return test::Run({"curl", "-sS", "--http2", "--max-time", "20", "--cacert", session_ca_file_,
                      "--resolve", absl::StrCat(kOtherHost, ":", port, ":127.0.0.1"), "-w",
                      "\n%{http_version}", absl::StrCat("https://", kOtherHost, ":", port, "/x")},
                     {});
  };
  curl();  // may fail: the proxy learns that the upstream has no HTTP/2
  test::CommandResult r = curl();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("GET /x HTTP/1.1\r\n"));
  EXPECT_TRUE(absl::EndsWith(r.out, "\n1.1")) << r.out;
}

}  // namespace
}  // namespace lazaret::egressd
