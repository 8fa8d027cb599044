#include "tests/e2e/net_e2e_egress_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/e2e/net_e2e_support.h"

namespace lazaret::test::e2e::net {
namespace {

// What one connection may send: a request head a proxy should have
// refused long before (so that a 431 the sandbox sees can only be the
// proxy's), a body, and connections at once.
constexpr size_t kMaxHead = 1 << 20;
constexpr size_t kMaxBody = 1 << 20;
constexpr size_t kMaxConnections = 64;
constexpr int kIoTimeoutSeconds = 10;

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
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

// Offers HTTP/1.1 when the client asks for it; with no ALPN in common the
// handshake goes on without one (HTTP/1.1).
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof(kHttp11), in, inlen) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

std::string Base64Decode(const std::string& in) {
  if (in.empty() || in.size() % 4 != 0 || in.size() > 4096) return "";
  std::string out(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  if (n < 0) return "";
  out.resize(static_cast<size_t>(n));
  size_t pad = 0;
  for (size_t i = in.size(); i > 0 && in[i - 1] == '='; --i) ++pad;
  out.resize(out.size() - std::min(pad, out.size()));
  return out;
}

std::string Header(const UpstreamRequest& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

bool WriteAll(SSL* ssl, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const int n = SSL_write(ssl, data.data() + done, static_cast<int>(data.size() - done));
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads more of the connection into `pending`; false at its end.
bool ReadMore(SSL* ssl, std::string* pending) {
  char buf[16384];
  const int n = SSL_read(ssl, buf, sizeof(buf));
  if (n <= 0) return false;
  pending->append(buf, static_cast<size_t>(n));
  return true;
}

}  // namespace

UpstreamPki::UpstreamPki(const std::vector<std::string>& names, const std::string& address) {
  ca_key_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  ca_ = NewCert(kCaName, ca_key_, 1);
  X509_set_issuer_name(ca_, X509_get_subject_name(ca_));
  AddExtension(ca_, ca_, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(ca_, ca_, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(ca_, ca_, NID_subject_key_identifier, "hash");
  X509_sign(ca_, ca_key_, EVP_sha256());
  server_key_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  server_ = NewCert(names.empty() ? "upstream" : names[0].c_str(), server_key_, 2);
  X509_set_issuer_name(server_, X509_get_subject_name(ca_));
  AddExtension(server_, ca_, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(server_, ca_, NID_ext_key_usage, "serverAuth");
  std::vector<std::string> sans = {"IP:" + address};
  for (const auto& n : names) sans.push_back("DNS:" + n);
  AddExtension(server_, ca_, NID_subject_alt_name, absl::StrJoin(sans, ","));
  X509_sign(server_, ca_key_, EVP_sha256());
}

UpstreamPki::~UpstreamPki() {
  X509_free(server_);
  EVP_PKEY_free(server_key_);
  X509_free(ca_);
  EVP_PKEY_free(ca_key_);
}

std::string UpstreamPki::CaPem() const {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, ca_);
  char* p = nullptr;
  const long n = BIO_get_mem_data(b, &p);
  std::string out(p, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

absl::StatusOr<std::unique_ptr<FakeUpstream>> FakeUpstream::Start(const TestHost& host,
                                                                  const std::string& address,
                                                                  uint16_t port,
                                                                  const UpstreamPki& pki,
                                                                  UpstreamCredentials credentials) {
  // A proxy that gives up mid-write must not end the test process.
  signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<FakeUpstream> s(new FakeUpstream());
  s->credentials_ = std::move(credentials);
  s->ctx_ = SSL_CTX_new(TLS_server_method());
  if (s->ctx_ == nullptr || SSL_CTX_use_certificate(s->ctx_, pki.server()) != 1 ||
      SSL_CTX_use_PrivateKey(s->ctx_, pki.server_key()) != 1) {
    return absl::InternalError("the upstream's TLS context could not be set up");
  }
  SSL_CTX_set_alpn_select_cb(s->ctx_, SelectAlpn, nullptr);
  absl::Status bound = absl::InternalError("not run");
  absl::Status inside = host.RunInside([&] {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, address.c_str(), &a.sin_addr);
    const int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        listen(fd, 64) != 0) {
      bound = absl::InternalError(
          absl::StrCat("listening on ", address, ":", port, ": ", strerror(errno)));
      if (fd >= 0) close(fd);
      return;
    }
    s->listen_ = fd;
    bound = absl::OkStatus();
  });
  if (!inside.ok()) return inside;
  if (!bound.ok()) return bound;
  s->stop_ = eventfd(0, EFD_CLOEXEC);
  s->acceptor_ = std::thread([p = s.get()] { p->Accept(); });
  return s;
}

FakeUpstream::~FakeUpstream() {
  if (acceptor_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_, &one, sizeof(one));
    acceptor_.join();
  }
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    for (int fd : live_) shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  if (listen_ >= 0) close(listen_);
  if (stop_ >= 0) close(stop_);
  SSL_CTX_free(ctx_);
}

void FakeUpstream::Accept() {
  for (;;) {
    pollfd fds[2] = {{listen_, POLLIN, 0}, {stop_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    const int c = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_ || live_.size() >= kMaxConnections) {
      close(c);
      continue;
    }
    live_.push_back(c);
    workers_.emplace_back([this, c] { Serve(c); });
  }
}

void FakeUpstream::Serve(int fd) {
  timeval tv{kIoTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  SSL* ssl = SSL_new(ctx_);
  SSL_set_fd(ssl, fd);
  if (SSL_accept(ssl) == 1) {
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    const std::string sni = name == nullptr ? "" : name;
    {
      std::lock_guard<std::mutex> l(mu_);
      handshakes_.push_back(sni);
    }
    std::string pending;
    while (ServeOne(ssl, sni, &pending)) {
    }
    SSL_shutdown(ssl);
  }
  ERR_clear_error();
  SSL_free(ssl);
  std::lock_guard<std::mutex> l(mu_);
  // Closed under the lock, so the destructor never shuts down a number
  // that was reused.
  live_.erase(std::remove(live_.begin(), live_.end(), fd), live_.end());
  close(fd);
}

bool FakeUpstream::ServeOne(SSL* ssl, const std::string& sni, std::string* pending) {
  size_t head_end;
  while ((head_end = pending->find("\r\n\r\n")) == std::string::npos) {
    if (pending->size() > kMaxHead || !ReadMore(ssl, pending)) return false;
  }
  UpstreamRequest r;
  r.sni = sni;
  r.realtime_ns = RealtimeNs();
  std::vector<std::string> lines = absl::StrSplit(pending->substr(0, head_end), "\r\n");
  pending->erase(0, head_end + 4);
  std::vector<std::string> request_line = absl::StrSplit(lines[0], ' ');
  if (request_line.size() != 3 || !absl::StartsWith(request_line[2], "HTTP/1.")) return false;
  r.method = request_line[0];
  r.target = request_line[1];
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos || colon == 0) return false;
    r.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  if (absl::EqualsIgnoreCase(Header(r, "transfer-encoding"), "chunked")) {
    for (;;) {
      size_t eol;
      while ((eol = pending->find("\r\n")) == std::string::npos) {
        if (pending->size() > 64 || !ReadMore(ssl, pending)) return false;
      }
      uint64_t size = 0;
      const std::string size_text = pending->substr(0, pending->find_first_of(";\r"));
      if (!absl::SimpleHexAtoi(size_text, &size) || size > kMaxBody - r.body.size()) return false;
      pending->erase(0, eol + 2);
      while (pending->size() < size + 2) {
        if (!ReadMore(ssl, pending)) return false;
      }
      r.body.append(*pending, 0, size);
      pending->erase(0, size + 2);
      if (size == 0) break;  // no trailers are sent by the clients here
    }
  } else if (const std::string cl = Header(r, "content-length"); !cl.empty()) {
    uint64_t size = 0;
    if (!absl::SimpleAtoi(cl, &size) || size > kMaxBody) return false;
    while (pending->size() < size) {
      if (!ReadMore(ssl, pending)) return false;
    }
    r.body = pending->substr(0, size);
    pending->erase(0, size);
  }
  r.key_ok = !credentials_.api_key.empty() && Header(r, "x-api-key") == credentials_.api_key;
  const std::string auth = Header(r, "authorization");
  r.bearer_ok = !credentials_.bearer.empty() && auth == "Bearer " + credentials_.bearer;
  if (absl::StartsWith(auth, "Basic ") && !credentials_.basic_password.empty()) {
    const std::string decoded = Base64Decode(auth.substr(6));
    const size_t colon = decoded.find(':');
    r.basic_ok =
        colon != std::string::npos && decoded.substr(colon + 1) == credentials_.basic_password;
  }
  const bool close = absl::EqualsIgnoreCase(Header(r, "connection"), "close");
  {
    std::lock_guard<std::mutex> l(mu_);
    requests_.push_back(r);
  }
  Answer(ssl, r, close);
  return !close;
}

void FakeUpstream::Answer(SSL* ssl, const UpstreamRequest& r, bool close) {
  const std::string connection = close ? "Connection: close\r\n" : "";
  if (absl::StartsWith(r.target, "/sse")) {
    if (!WriteAll(ssl, absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                    "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n",
                                    connection, "\r\n"))) {
      return;
    }
    // "/sse?n=N": N events instead of kSseEvents (1 to 100).
    int events = kSseEvents;
    if (const size_t q = r.target.find("?n="); q != std::string::npos) {
      int n = 0;
      if (absl::SimpleAtoi(r.target.substr(q + 3), &n) && n >= 1 && n <= 100) events = n;
    }
    std::vector<int64_t> sent;
    for (int i = 1; i <= events; ++i) {
      if (i > 1) std::this_thread::sleep_for(std::chrono::milliseconds(kSseGapMs));
      const std::string event = absl::StrCat("data: event ", i, "\n\n");
      sent.push_back(RealtimeNs());
      if (!WriteAll(ssl, absl::StrCat(absl::Hex(event.size()), "\r\n", event, "\r\n"))) break;
    }
    WriteAll(ssl, "0\r\n\r\n");
    std::lock_guard<std::mutex> l(mu_);
    sse_sent_ = std::move(sent);
    return;
  }
  std::string body;
  std::string extra;
  if (absl::StartsWith(r.target, "/echo-key")) {
    // An upstream that echoes the credential back, in its body and in a
    // header: the proxy must not let it reach the sandbox.
    body = absl::StrCat("{\"echo\":\"", JsonEscape(credentials_.api_key), "\"}\n");
    extra = absl::StrCat("X-Echo-Key: ", credentials_.api_key, "\r\n");
  } else {
    body = absl::StrCat("{\"method\":\"", JsonEscape(r.method), "\",\"path\":\"",
                        JsonEscape(r.target), "\",\"host\":\"", JsonEscape(Header(r, "host")),
                        "\",\"x_api_key\":\"", JsonEscape(Header(r, "x-api-key")),
                        "\",\"authorization\":\"", JsonEscape(Header(r, "authorization")),
                        "\",\"key_ok\":", r.key_ok ? "true" : "false",
                        ",\"bearer_ok\":", r.bearer_ok ? "true" : "false",
                        ",\"basic_ok\":", r.basic_ok ? "true" : "false", "}\n");
  }
  WriteAll(ssl, absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", extra,
                             "Content-Length: ", body.size(), "\r\n", connection, "\r\n", body));
}

std::vector<UpstreamRequest> FakeUpstream::Requests() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_;
}

size_t FakeUpstream::RequestCount() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_.size();
}

std::vector<std::string> FakeUpstream::Handshakes() const {
  std::lock_guard<std::mutex> l(mu_);
  return handshakes_;
}

std::vector<int64_t> FakeUpstream::LastSseSent() const {
  std::lock_guard<std::mutex> l(mu_);
  return sse_sent_;
}

size_t FakeUpstream::RequestsCarrying(const std::vector<std::string>& needles) const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const UpstreamRequest& r : requests_) {
    bool found = false;
    for (const std::string& needle : needles) {
      if (needle.empty()) continue;
      found = found || absl::StrContains(r.target, needle) || absl::StrContains(r.body, needle);
      for (const auto& [name, value] : r.headers) {
        found = found || absl::StrContains(name, needle) || absl::StrContains(value, needle);
      }
    }
    n += found ? 1 : 0;
  }
  return n;
}

HttpResponse ParseHttpResponse(const std::string& text) {
  HttpResponse out;
  const size_t start = text.find("HTTP/1.");
  if (start == std::string::npos) return out;
  const size_t head_end = text.find("\r\n\r\n", start);
  const std::string head =
      text.substr(start, head_end == std::string::npos ? std::string::npos : head_end - start);
  std::vector<std::string> lines = absl::StrSplit(head, "\r\n");
  std::vector<std::string> status_line = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &out.status)) out.status = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    out.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  if (head_end == std::string::npos) return out;
  std::string rest = text.substr(head_end + 4);
  auto te = out.headers.find("transfer-encoding");
  if (te == out.headers.end() || !absl::EqualsIgnoreCase(te->second, "chunked")) {
    out.body = std::move(rest);
    return out;
  }
  // Chunked: sizes and data; a truncated stream keeps what arrived.
  size_t pos = 0;
  while (pos < rest.size()) {
    const size_t eol = rest.find("\r\n", pos);
    if (eol == std::string::npos) break;
    uint64_t size = 0;
    if (!absl::SimpleHexAtoi(rest.substr(pos, rest.find_first_of(";\r", pos) - pos), &size) ||
        size == 0) {
      break;
    }
    out.body.append(rest, eol + 2, std::min<uint64_t>(size, rest.size() - (eol + 2)));
    pos = eol + 2 + size + 2;
  }
  return out;
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      absl::StrAppend(&out, "\\u00", absl::Hex(c, absl::kZeroPad2));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace lazaret::test::e2e::net
