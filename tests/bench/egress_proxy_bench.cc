// Benchmark: the egress proxy's cost on a request (issue 25), in one run on
// loopback. A local upstream (a blocking OpenSSL server with a leaf of its
// own test CA; HTTP/1.1, and HTTP/2 with nghttp2, by ALPN) stands in for a
// vendor API. The same client code fetches from it directly (the baseline,
// sending the real key itself) and through ServeConnection (in-process
// threads, one real TCP connection per client connection, a dialer to the
// upstream on loopback, a guard with one secret injected as a header for
// the host, so injection and redaction both run on every request; the
// upstream echoes the key it got, which the proxied client must see
// masked). Requests alternate between the two sides so that a change of
// the machine's load weighs on both alike.
//
// Workloads, each over HTTP/1.1 and over HTTP/2:
//   (a) a 1 MiB response streamed (the upstream writes 16 KiB records):
//       time to first byte p50/p99 and throughput, on one keep-alive
//       connection per side;
//   (b) 1,000 small requests on one keep-alive connection per side,
//       paced below the proxy's HTTP/2 budget of new streams a second:
//       latency p50/p99;
//   (c) 200 small requests on a new connection each (TCP connect, TLS
//       handshake; through the proxy also its upstream dial and
//       handshake): latency p50/p99.
// Each workload stops measuring after kWorkloadCap, so that a proxy that
// stalls every request still ends the bench within a minute.
// Prints each side, the ratio, and the targets (latency at most
// 1.2x; at most 2 ms of time to first byte added at p50) with a verdict.
// A missed target is reported, not a failure (a loaded machine is not a
// regression); the exit status is non-zero only when a request failed or
// a byte differed (wrong body, key not injected, value not redacted, a
// request the proxy logged as refused). Flags: see main().
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "services/common/fs/fd.h"
#include "services/common/status_util.h"
#include "services/egressd/ca.h"
#include "services/egressd/connection.h"
#include "services/egressd/guard.h"
#include "tests/support/test_support.h"

namespace lazaret::egressd::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kHost[] = "api.example.com";
constexpr char kKeyHeader[] = "x-api-key";
// What the client holds through the proxy, and what the proxy (or, for
// the baseline, the client itself) sends upstream. Same length, so both
// sides send the same bytes.
constexpr char kPlaceholder[] = "lzs-0123456789abcdef0123456789abcdef";
constexpr char kValue[] = "sk-bench-REAL-SECRET-000111222333444";
static_assert(sizeof(kPlaceholder) == sizeof(kValue));

constexpr size_t kBigBytes = 1024 * 1024;
constexpr size_t kBigPiece = 16 * 1024;  // the upstream's write size for the big body
constexpr size_t kSmallBytes = 256;      // a small API answer
constexpr int kBigWarmup = 3;
constexpr int kBigRuns = 60;
constexpr int kSmallWarmup = 50;
constexpr int kSmallRuns = 1000;
// Pairs of small requests a second: the proxy's HTTP/2 side ends a
// connection that opens more than Http2Limits::max_new_streams_per_second
// (500) streams in a second, completed ones included, so (b) stays below.
constexpr int kSmallPerSecond = 400;
constexpr int kConnWarmup = 5;
constexpr int kConnRuns = 200;

// Measuring one workload stops after this long (a proxy that stalls each
// request still lets the bench end within a minute).
constexpr std::chrono::seconds kWorkloadCap(7);

// The targets.
constexpr double kLatencyRatioTarget = 1.2;
constexpr double kTtfbAddedTargetMs = 2.0;

// Bounds on what the bench reads from its peers.
constexpr size_t kMaxHead = 64 * 1024;
constexpr int kIoTimeoutSeconds = 10;

const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// The value at quantile `q` (nearest rank) of `v`, which it sorts.
double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(q * static_cast<double>(v.size()) + 0.999999);
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// ---- Sockets -------------------------------------------------------------

void SetNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void SetTimeouts(int fd) {
  timeval tv{kIoTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

absl::StatusOr<fs::UniqueFd> ListenLoopback(uint16_t* port) {
  fs::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return absl::InternalError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd.get(), 128) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::InternalError("cannot listen on 127.0.0.1");
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

absl::StatusOr<fs::UniqueFd> ConnectLoopback(uint16_t port) {
  fs::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return absl::InternalError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot connect to 127.0.0.1:", port));
  }
  return fd;
}

// Accepts on a loopback port until destroyed; each connection is served
// on a thread of its own. Finished threads are joined at the next accept,
// so a run of many short connections does not pile them up.
class Acceptor {
 public:
  // `name` names the serving threads (at most 15 bytes), so that a
  // profile of the bench tells the proxy from the upstream.
  static absl::StatusOr<std::unique_ptr<Acceptor>> Create(const char* name,
                                                          std::function<void(fs::UniqueFd)> serve) {
    uint16_t port = 0;
    absl::StatusOr<fs::UniqueFd> fd = ListenLoopback(&port);
    if (!fd.ok()) return fd.status();
    return std::unique_ptr<Acceptor>(new Acceptor(name, std::move(*fd), port, std::move(serve)));
  }
  ~Acceptor() {
    shutdown(listen_fd_.get(), SHUT_RDWR);  // wakes accept
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (Worker& w : workers_) w.thread.join();
  }
  uint16_t port() const { return port_; }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  Acceptor(const char* name, fs::UniqueFd fd, uint16_t port,
           std::function<void(fs::UniqueFd)> serve)
      : name_(name), listen_fd_(std::move(fd)), port_(port), serve_(std::move(serve)) {
    thread_ = std::thread([this] { Loop(); });
  }

  void Loop() {
    while (true) {
      const int fd = accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      workers_.erase(std::remove_if(workers_.begin(), workers_.end(),
                                    [](Worker& w) {
                                      if (!w.done->load()) return false;
                                      w.thread.join();
                                      return true;
                                    }),
                     workers_.end());
      auto done = std::make_shared<std::atomic<bool>>(false);
      workers_.push_back({std::thread([this, fd, done] {
                            pthread_setname_np(pthread_self(), name_);
                            serve_(fs::UniqueFd(fd));
                            done->store(true);
                          }),
                          done});
    }
  }

  const char* name_;
  fs::UniqueFd listen_fd_;
  uint16_t port_;
  std::function<void(fs::UniqueFd)> serve_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Worker> workers_;
};

// The first error of a run, from any thread (the upstream's threads find
// most of them). Messages never carry the secret's value.
class Errors {
 public:
  void Add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    if (first_.empty()) first_ = what;
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }
  std::string first() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_;
  }

 private:
  std::mutex mu_;
  int count_ = 0;
  std::string first_;
};

// The bodies the upstream sends: printable pseudo-random text (fixed seed),
// as an API's JSON is, which the redactor must scan byte by byte.
std::string MakeBody(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0x20, 0x7e);
  std::string s(n, ' ');
  for (char& c : s) c = static_cast<char>(dist(rng));
  return s;
}

// The value of header `name` in a head (CRLF lines), case-insensitive
// name; empty when absent.
std::string HeaderValue(absl::string_view head, absl::string_view name) {
  size_t pos = head.find("\r\n");
  while (pos != absl::string_view::npos && pos + 2 < head.size()) {
    const size_t start = pos + 2;
    const size_t end = head.find("\r\n", start);
    if (end == absl::string_view::npos) break;
    const absl::string_view line = head.substr(start, end - start);
    const size_t colon = line.find(':');
    if (colon != absl::string_view::npos && absl::EqualsIgnoreCase(line.substr(0, colon), name)) {
      return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
    pos = end;
  }
  return {};
}

// The protocol ALPN selected on a connection ("" for none).
std::string NegotiatedAlpn(const SSL* ssl) {
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &proto, &len);
  return std::string(reinterpret_cast<const char*>(proto), proto == nullptr ? 0 : len);
}

// An nghttp2 header field pointing into `name` and `value` (nghttp2 copies
// them when the frame is submitted).
nghttp2_nv Nv(absl::string_view name, absl::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// ---- The upstream --------------------------------------------------------

// The stand-in for a vendor API: answers GET /big with kBigBytes streamed
// in kBigPiece writes, GET /small with kSmallBytes at once, each with
// `X-Seen-Key:` echoing the key it received, which must be the real value
// (so the proxy's redaction of response headers runs too). Anything else
// is an error of the run.
class Upstream {
 public:
  static absl::StatusOr<std::unique_ptr<Upstream>> Create(const std::string& dir, Errors* errors,
                                                          const std::string* big,
                                                          const std::string* small) {
    std::unique_ptr<Upstream> u(new Upstream(errors, big, small));
    absl::StatusOr<std::unique_ptr<SessionCa>> ca = SessionCa::Create("bench-upstream", {kHost});
    if (!ca.ok()) return ca.status();
    u->ca_ = std::move(*ca);
    u->ca_file_ = dir + "/upstream-ca.pem";
    std::ofstream(u->ca_file_) << u->ca_->CaPem();
    u->ctx_ = SSL_CTX_new(TLS_server_method());
    if (u->ctx_ == nullptr) return absl::InternalError("SSL_CTX_new failed");
    SSL_CTX_set_min_proto_version(u->ctx_, TLS1_2_VERSION);
    SSL_CTX_set_tlsext_servername_callback(u->ctx_, &Upstream::OnName);
    SSL_CTX_set_tlsext_servername_arg(u->ctx_, u.get());
    SSL_CTX_set_alpn_select_cb(u->ctx_, &Upstream::OnAlpn, nullptr);
    Upstream* self = u.get();
    absl::StatusOr<std::unique_ptr<Acceptor>> acceptor =
        Acceptor::Create("upstream", [self](fs::UniqueFd fd) { self->Serve(std::move(fd)); });
    if (!acceptor.ok()) return acceptor.status();
    u->acceptor_ = std::move(*acceptor);
    return u;
  }
  ~Upstream() {
    acceptor_.reset();
    SSL_CTX_free(ctx_);
  }
  uint16_t port() const { return acceptor_->port(); }
  const std::string& ca_file() const { return ca_file_; }

 private:
  Upstream(Errors* errors, const std::string* big, const std::string* small)
      : errors_(errors), big_(big), small_(small) {}

  static int OnName(SSL* ssl, int*, void* arg) {
    auto* self = static_cast<Upstream*>(arg);
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (name == nullptr || std::string(name) != kHost) return SSL_TLSEXT_ERR_ALERT_FATAL;
    absl::StatusOr<std::shared_ptr<const LeafCert>> leaf = self->ca_->LeafFor(name);
    if (!leaf.ok()) return SSL_TLSEXT_ERR_ALERT_FATAL;
    SSL_use_certificate(ssl, (*leaf)->cert.get());
    SSL_use_PrivateKey(ssl, (*leaf)->key.get());
    return SSL_TLSEXT_ERR_OK;
  }

  static int OnAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                    unsigned int inlen, void*) {
    static const unsigned char kOffer[] = "\x02h2\x08http/1.1";
    unsigned char* chosen = nullptr;
    if (SSL_select_next_proto(&chosen, outlen, kOffer, sizeof(kOffer) - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED) {
      return SSL_TLSEXT_ERR_NOACK;
    }
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
  }

  bool WriteAll(SSL* ssl, absl::string_view data) {
    while (!data.empty()) {
      const int n = SSL_write(ssl, data.data(), static_cast<int>(data.size()));
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  void Serve(fs::UniqueFd fd) {
    SetNoDelay(fd.get());
    SetTimeouts(fd.get());
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd.get());
    if (SSL_accept(ssl) == 1) {
      if (NegotiatedAlpn(ssl) == "h2") {
        Http2Conn(this, ssl).Run();
      } else {
        ServeHttp1(ssl);
      }
    } else {
      errors_->Add("upstream: TLS handshake failed");
    }
    ERR_clear_error();
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }

  void ServeHttp1(SSL* ssl) {
    std::string in;
    char buf[16384];
    while (true) {
      const size_t end = in.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (in.size() > kMaxHead) {
          errors_->Add("upstream: request head too large");
          return;
        }
        const int n = SSL_read(ssl, buf, sizeof(buf));
        if (n <= 0) return;  // the connection ended between requests
        in.append(buf, static_cast<size_t>(n));
        continue;
      }
      const std::string head = in.substr(0, end + 4);
      in.erase(0, end + 4);
      const std::string key = HeaderValue(head, kKeyHeader);
      if (key != kValue) {
        errors_->Add(absl::StrCat("upstream: the request did not carry the real key (",
                                  key.empty() ? "no key" : "another value", ")"));
        return;
      }
      if (!HeaderValue(head, "content-length").empty() ||
          !HeaderValue(head, "transfer-encoding").empty()) {
        errors_->Add("upstream: a GET with a body");
        return;
      }
      const std::string* body = nullptr;
      if (absl::StartsWith(head, "GET /big ")) {
        body = big_;
      } else if (absl::StartsWith(head, "GET /small ")) {
        body = small_;
      } else {
        errors_->Add("upstream: unexpected request line");
        return;
      }
      const std::string resp_head =
          absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n",
                       "X-Seen-Key: ", key, "\r\nContent-Length: ", body->size(), "\r\n\r\n");
      bool ok;
      if (body == big_) {
        // Streamed: the head first, then the body as it "arrives".
        ok = WriteAll(ssl, resp_head);
        for (size_t off = 0; ok && off < body->size(); off += kBigPiece) {
          ok = WriteAll(ssl, absl::string_view(*body).substr(off, kBigPiece));
        }
      } else {
        ok = WriteAll(ssl, absl::StrCat(resp_head, *body));
      }
      if (!ok) return;  // the client went away (the bench's client reports it)
    }
  }

  // The body for a request path; null for any other path.
  const std::string* BodyFor(absl::string_view path) const {
    if (path == "/big") return big_;
    if (path == "/small") return small_;
    return nullptr;
  }

  // One HTTP/2 connection: an nghttp2 server session driven by blocking
  // TLS reads and writes. The body of /big goes out as DATA frames as the
  // flow-control windows allow, written in kBigPiece batches.
  class Http2Conn {
   public:
    Http2Conn(Upstream* up, SSL* ssl) : up_(up), ssl_(ssl) {}
    ~Http2Conn() {
      if (session_ != nullptr) nghttp2_session_del(session_);
    }

    void Run() {
      nghttp2_session_callbacks* cbs = nullptr;
      if (nghttp2_session_callbacks_new(&cbs) != 0) return;
      nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &Http2Conn::OnBeginHeaders);
      nghttp2_session_callbacks_set_on_header_callback(cbs, &Http2Conn::OnHeader);
      nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Http2Conn::OnFrameRecv);
      nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Http2Conn::OnStreamClose);
      const int rv = nghttp2_session_server_new(&session_, cbs, this);
      nghttp2_session_callbacks_del(cbs);
      if (rv != 0) {
        up_->errors_->Add("upstream: nghttp2_session_server_new failed");
        return;
      }
      const nghttp2_settings_entry settings[] = {
          {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kMaxStreams}};
      nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
      char buf[16384];
      while (Flush()) {
        if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
          return;
        }
        const int n = SSL_read(ssl_, buf, sizeof(buf));
        if (n <= 0) return;  // the connection ended
        if (nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(buf),
                                     static_cast<size_t>(n)) < 0) {
          up_->errors_->Add("upstream: malformed HTTP/2 input");
          return;
        }
      }
    }

   private:
    static constexpr uint32_t kMaxStreams = 100;
    static constexpr size_t kMaxHeaderBytes = 16 * 1024;

    struct Stream {
      std::string path;
      std::string key;
      std::string length;  // the content-length value sent
      size_t header_bytes = 0;
      const std::string* body = nullptr;
      size_t off = 0;
    };

    bool Flush() {
      std::string out;
      while (true) {
        const uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n < 0) return false;
        if (n > 0) out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
        if (n == 0 || out.size() >= kBigPiece) {
          if (!out.empty() && !up_->WriteAll(ssl_, out)) return false;
          out.clear();
          if (n == 0) return true;
        }
      }
    }

    static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* arg) {
      auto* self = static_cast<Http2Conn*>(arg);
      if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
        return 0;
      }
      if (self->streams_.size() >= kMaxStreams) return NGHTTP2_ERR_CALLBACK_FAILURE;
      self->streams_[frame->hd.stream_id] = Stream{};
      return 0;
    }

    static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                        size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* arg) {
      auto* self = static_cast<Http2Conn*>(arg);
      auto it = self->streams_.find(frame->hd.stream_id);
      if (it == self->streams_.end()) return 0;
      Stream& s = it->second;
      s.header_bytes += namelen + valuelen + 32;
      if (s.header_bytes > kMaxHeaderBytes) return NGHTTP2_ERR_CALLBACK_FAILURE;
      const absl::string_view n(reinterpret_cast<const char*>(name), namelen);
      const absl::string_view v(reinterpret_cast<const char*>(value), valuelen);
      if (n == ":path") s.path = std::string(v);
      if (n == kKeyHeader) s.key = std::string(v);
      return 0;
    }

    static int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* arg) {
      auto* self = static_cast<Http2Conn*>(arg);
      const int32_t id = frame->hd.stream_id;
      if (frame->hd.type == NGHTTP2_DATA && frame->hd.length > 0) {
        self->up_->errors_->Add("upstream: a GET with a body");
        return NGHTTP2_ERR_CALLBACK_FAILURE;
      }
      if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST ||
          (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
        return 0;
      }
      auto it = self->streams_.find(id);
      if (it == self->streams_.end()) return NGHTTP2_ERR_CALLBACK_FAILURE;
      Stream& s = it->second;
      if (s.key != kValue) {
        self->up_->errors_->Add(absl::StrCat("upstream: the request did not carry the real key (",
                                             s.key.empty() ? "no key" : "another value", ")"));
        return nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
      }
      s.body = self->up_->BodyFor(s.path);
      if (s.body == nullptr) {
        self->up_->errors_->Add("upstream: unexpected request path");
        return nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
      }
      s.length = absl::StrCat(s.body->size());
      const nghttp2_nv nva[] = {
          Nv(":status", "200"),
          Nv("content-type", "application/octet-stream"),
          Nv("x-seen-key", s.key),
          Nv("content-length", s.length),
      };
      nghttp2_data_provider provider{};
      provider.read_callback = &Http2Conn::ReadBody;
      return nghttp2_submit_response(session, id, nva, sizeof(nva) / sizeof(nva[0]), &provider);
    }

    static ssize_t ReadBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                            uint32_t* flags, nghttp2_data_source*, void* arg) {
      auto* self = static_cast<Http2Conn*>(arg);
      auto it = self->streams_.find(id);
      if (it == self->streams_.end() || it->second.body == nullptr) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
      Stream& s = it->second;
      // A frame (9-byte header and payload) fills one TLS record.
      const size_t n = std::min({length, kBigPiece - 9, s.body->size() - s.off});
      std::memcpy(buf, s.body->data() + s.off, n);
      s.off += n;
      if (s.off == s.body->size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    }

    static int OnStreamClose(nghttp2_session*, int32_t id, uint32_t, void* arg) {
      static_cast<Http2Conn*>(arg)->streams_.erase(id);
      return 0;
    }

    Upstream* up_;
    SSL* ssl_;
    nghttp2_session* session_ = nullptr;
    std::map<int32_t, Stream> streams_;
  };

  Errors* errors_;
  const std::string* big_;
  const std::string* small_;
  std::unique_ptr<SessionCa> ca_;
  std::string ca_file_;
  SSL_CTX* ctx_ = nullptr;
  std::unique_ptr<Acceptor> acceptor_;
};

// Dials the upstream on loopback whatever the host (as the service's
// dialer hands the proxy a connected socket).
class LoopbackDialer : public UpstreamDialer {
 public:
  LoopbackDialer(uint16_t port, bool nodelay) : port_(port), nodelay_(nodelay) {}
  absl::StatusOr<fs::UniqueFd> Dial(const std::string& host, uint16_t port) override {
    if (host != kHost || port != kHttpsPort) {
      return absl::PermissionDeniedError(absl::StrCat("the bench dials only ", kHost, ":443"));
    }
    absl::StatusOr<fs::UniqueFd> fd = ConnectLoopback(port_);
    if (fd.ok() && nodelay_) SetNoDelay(fd->get());
    return fd;
  }

 private:
  uint16_t port_;
  bool nodelay_;
};

// ---- The clients ---------------------------------------------------------

// What one side of the comparison is: where the client connects, which
// key it sends, and what it must see echoed in X-Seen-Key.
struct Side {
  const char* name;
  uint16_t port;
  std::string key;
  std::string seen_key;
};

struct Timing {
  double ttfb_us = 0;   // request written to the response's first byte
  double total_us = 0;  // request written to the last body byte read
};

// One client connection; requests in turn.
class Client {
 public:
  virtual ~Client() = default;
  // GET `path`; the body must equal `expected`.
  virtual absl::Status Get(absl::string_view path, const std::string& expected, Timing* t) = 0;
};

// A blocking TLS connection to a side (OpenSSL, verifying the certificate
// for kHost against the bench's CAs), offering `alpn` (wire format).
class TlsConnection {
 public:
  static absl::StatusOr<std::unique_ptr<TlsConnection>> Connect(SSL_CTX* ctx, const Side& side,
                                                                absl::string_view alpn) {
    absl::StatusOr<fs::UniqueFd> fd = ConnectLoopback(side.port);
    if (!fd.ok()) return fd.status();
    SetNoDelay(fd->get());
    SetTimeouts(fd->get());
    std::unique_ptr<TlsConnection> c(new TlsConnection(std::move(*fd), SSL_new(ctx)));
    SSL_set_fd(c->ssl_, c->fd_.get());
    SSL_set_tlsext_host_name(c->ssl_, kHost);
    SSL_set1_host(c->ssl_, kHost);
    SSL_set_alpn_protos(c->ssl_, reinterpret_cast<const unsigned char*>(alpn.data()),
                        static_cast<unsigned int>(alpn.size()));
    if (SSL_connect(c->ssl_) != 1) {
      ERR_clear_error();
      return absl::UnavailableError(absl::StrCat(side.name, ": TLS handshake failed"));
    }
    return c;
  }
  ~TlsConnection() {
    SSL_shutdown(ssl_);
    SSL_free(ssl_);
    ERR_clear_error();
  }
  SSL* ssl() const { return ssl_; }

  bool WriteAll(absl::string_view data) {
    while (!data.empty()) {
      const int n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
      if (n <= 0) {
        ERR_clear_error();
        return false;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads what is there (blocking for at least a byte); 0 at the end or on
  // an error (SO_RCVTIMEO bounds the wait).
  size_t Read(char* buf, size_t cap) {
    const int n = SSL_read(ssl_, buf, static_cast<int>(cap));
    if (n <= 0) {
      ERR_clear_error();
      return 0;
    }
    return static_cast<size_t>(n);
  }

 private:
  TlsConnection(fs::UniqueFd fd, SSL* ssl) : fd_(std::move(fd)), ssl_(ssl) {}
  fs::UniqueFd fd_;
  SSL* ssl_;
};

class Http1Client : public Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(SSL_CTX* ctx, const Side& side) {
    absl::StatusOr<std::unique_ptr<TlsConnection>> tls =
        TlsConnection::Connect(ctx, side, absl::string_view("\x08http/1.1", 9));
    if (!tls.ok()) return tls.status();
    return std::unique_ptr<Client>(new Http1Client(std::move(*tls), side));
  }

  absl::Status Get(absl::string_view path, const std::string& expected, Timing* t) override {
    const std::string req = absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: ", kHost,
                                         "\r\nUser-Agent: lazaret-bench\r\nAccept: */*\r\n",
                                         kKeyHeader, ": ", side_.key, "\r\n\r\n");
    const Clock::time_point start = Clock::now();
    if (!tls_->WriteAll(req)) return Fail("writing the request failed");
    // The head.
    bool first = true;
    size_t end;
    while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
      if (in_.size() > kMaxHead) return Fail("response head too large");
      if (!Fill()) return Fail("the connection ended before the response head");
      if (first) {
        t->ttfb_us = Micros(Clock::now() - start);
        first = false;
      }
    }
    const std::string head = in_.substr(0, end + 4);
    in_.erase(0, end + 4);
    if (!absl::StartsWith(head, "HTTP/1.1 200 ")) {
      return Fail(absl::StrCat("status line \"",
                               head.substr(0, std::min<size_t>(head.find('\r'), 80)), "\""));
    }
    if (HeaderValue(head, "x-seen-key") != side_.seen_key) {
      return Fail("X-Seen-Key is not what this side must see (injection or redaction)");
    }
    size_t length = 0;
    if (!absl::SimpleAtoi(HeaderValue(head, "content-length"), &length) ||
        length != expected.size()) {
      return Fail("no Content-Length, or not the body's");
    }
    // The body, compared as it arrives.
    size_t got = 0;
    while (true) {
      const size_t take = std::min(in_.size(), length - got);
      if (absl::string_view(in_).substr(0, take) != absl::string_view(expected).substr(got, take)) {
        return Fail(absl::StrCat("body differs near byte ", got));
      }
      got += take;
      in_.erase(0, take);
      if (got == length) break;
      if (!Fill()) return Fail(absl::StrCat("the connection ended after ", got, " body bytes"));
    }
    t->total_us = Micros(Clock::now() - start);
    if (!in_.empty()) return Fail("bytes after the response");
    return absl::OkStatus();
  }

 private:
  Http1Client(std::unique_ptr<TlsConnection> tls, const Side& side)
      : tls_(std::move(tls)), side_(side) {}

  bool Fill() {
    char buf[65536];
    const size_t n = tls_->Read(buf, sizeof(buf));
    in_.append(buf, n);
    return n > 0;
  }

  absl::Status Fail(const std::string& why) {
    return absl::DataLossError(absl::StrCat(side_.name, " HTTP/1.1: ", why));
  }

  std::unique_ptr<TlsConnection> tls_;
  const Side& side_;
  std::string in_;
};

// An nghttp2 client session over a blocking TLS connection (ALPN "h2"),
// one stream at a time. It grants 16 MiB windows, as browsers and curl
// grant large ones, so the baseline is not held back by flow control.
class Http2Client : public Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(SSL_CTX* ctx, const Side& side) {
    absl::StatusOr<std::unique_ptr<TlsConnection>> tls =
        TlsConnection::Connect(ctx, side, absl::string_view("\x02h2", 3));
    if (!tls.ok()) return tls.status();
    if (NegotiatedAlpn((*tls)->ssl()) != "h2") {
      return absl::UnavailableError(absl::StrCat(side.name, ": ALPN did not select h2"));
    }
    std::unique_ptr<Http2Client> c(new Http2Client(std::move(*tls), side));
    nghttp2_session_callbacks* cbs = nullptr;
    if (nghttp2_session_callbacks_new(&cbs) != 0) return absl::InternalError("nghttp2");
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &Http2Client::OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(cbs, &Http2Client::OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Http2Client::OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Http2Client::OnStreamClose);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Http2Client::OnFrameRecv);
    const int rv = nghttp2_session_client_new(&c->session_, cbs, c.get());
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) return absl::InternalError("nghttp2_session_client_new failed");
    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kWindow},
    };
    nghttp2_submit_settings(c->session_, NGHTTP2_FLAG_NONE, settings, 2);
    nghttp2_session_set_local_window_size(c->session_, NGHTTP2_FLAG_NONE, 0, kWindow);
    return std::unique_ptr<Client>(std::move(c));
  }
  ~Http2Client() override {
    if (session_ != nullptr) nghttp2_session_del(session_);
  }

  absl::Status Get(absl::string_view path, const std::string& expected, Timing* t) override {
    stream_ = Stream{};
    stream_.expected = &expected;
    const nghttp2_nv nva[] = {
        Nv(":method", "GET"),
        Nv(":scheme", "https"),
        Nv(":authority", kHost),
        Nv(":path", path),
        Nv("user-agent", "lazaret-bench"),
        Nv("accept", "*/*"),
        Nv(kKeyHeader, side_.key),
    };
    ++requests_;
    start_ = Clock::now();
    stream_.id = nghttp2_submit_request(session_, nullptr, nva, sizeof(nva) / sizeof(nva[0]),
                                        nullptr, nullptr);
    if (stream_.id < 0) return Fail("nghttp2_submit_request failed");
    char buf[65536];
    while (true) {
      if (!Flush()) return Fail("writing failed");
      if (stream_.closed) break;
      const size_t n = tls_->Read(buf, sizeof(buf));
      if (n == 0) return Fail("the connection ended mid-response");
      if (nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(buf), n) < 0) {
        return Fail("malformed HTTP/2 input");
      }
    }
    if (!stream_.error.empty()) return Fail(stream_.error);
    if (stream_.status != "200") return Fail(absl::StrCat("status ", stream_.status));
    if (stream_.seen_key != side_.seen_key) {
      return Fail("x-seen-key is not what this side must see (injection or redaction)");
    }
    if (stream_.got != expected.size()) {
      return Fail(absl::StrCat("the body ended after ", stream_.got, " bytes"));
    }
    t->ttfb_us = stream_.ttfb_us;
    t->total_us = Micros(stream_.end - start_);
    return absl::OkStatus();
  }

 private:
  static constexpr uint32_t kWindow = 16 * 1024 * 1024;
  static constexpr size_t kMaxHeaderBytes = 16 * 1024;

  struct Stream {
    int32_t id = -1;
    const std::string* expected = nullptr;
    double ttfb_us = 0;
    std::string status;
    std::string seen_key;
    size_t header_bytes = 0;
    size_t got = 0;
    bool closed = false;
    Clock::time_point end;
    std::string error;
  };

  Http2Client(std::unique_ptr<TlsConnection> tls, const Side& side)
      : tls_(std::move(tls)), side_(side) {}

  bool Flush() {
    std::string out;
    while (true) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return false;
      if (n == 0) break;
      out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    return out.empty() || tls_->WriteAll(out);
  }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* arg) {
    auto* self = static_cast<Http2Client*>(arg);
    if (frame->hd.stream_id == self->stream_.id && self->stream_.ttfb_us == 0) {
      self->stream_.ttfb_us = Micros(Clock::now() - self->start_);
    }
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* arg) {
    auto* self = static_cast<Http2Client*>(arg);
    Stream& s = self->stream_;
    if (frame->hd.stream_id != s.id) return 0;
    s.header_bytes += namelen + valuelen + 32;
    if (s.header_bytes > kMaxHeaderBytes) return NGHTTP2_ERR_CALLBACK_FAILURE;
    const absl::string_view n(reinterpret_cast<const char*>(name), namelen);
    const absl::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":status") s.status = std::string(v);
    if (n == "x-seen-key") s.seen_key = std::string(v);
    if (n == "content-length" && v != absl::StrCat(s.expected->size())) {
      s.error = "content-length is not the body's";
    }
    return 0;
  }

  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                    void* arg) {
    auto* self = static_cast<Http2Client*>(arg);
    Stream& s = self->stream_;
    if (id != s.id || !s.error.empty()) return 0;
    const absl::string_view chunk(reinterpret_cast<const char*>(data), len);
    if (s.got + len > s.expected->size() ||
        chunk != absl::string_view(*s.expected).substr(s.got, len)) {
      s.error = absl::StrCat("body differs near byte ", s.got);
      return 0;
    }
    s.got += len;
    return 0;
  }

  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* arg) {
    auto* self = static_cast<Http2Client*>(arg);
    if (frame->hd.type == NGHTTP2_GOAWAY && self->goaway_.empty()) {
      self->goaway_ =
          absl::StrCat("; the peer sent GOAWAY (", nghttp2_http2_strerror(frame->goaway.error_code),
                       ") after ", self->requests_, " requests");
    }
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t id, uint32_t error_code, void* arg) {
    auto* self = static_cast<Http2Client*>(arg);
    Stream& s = self->stream_;
    if (id != s.id) return 0;
    s.closed = true;
    s.end = Clock::now();
    if (error_code != NGHTTP2_NO_ERROR && s.error.empty()) {
      s.error = absl::StrCat("stream reset (", nghttp2_http2_strerror(error_code), ")");
    }
    return 0;
  }

  absl::Status Fail(const std::string& why) {
    return absl::DataLossError(absl::StrCat(side_.name, " HTTP/2: ", why, goaway_));
  }

  std::unique_ptr<TlsConnection> tls_;
  const Side& side_;
  nghttp2_session* session_ = nullptr;
  Clock::time_point start_;
  Stream stream_;
  int requests_ = 0;
  std::string goaway_;  // how the peer ended the connection, for errors
};

using Connector = std::function<absl::StatusOr<std::unique_ptr<Client>>(const Side&)>;

// ---- Measurements --------------------------------------------------------

struct Series {
  std::vector<double> ttfb_us;
  std::vector<double> total_us;
};

// The two sides of one workload. Requests alternate between them (and
// which goes first alternates too); measuring stops at `runs` requests a
// side, or at `deadline` (a proxy that stalls each request still ends the
// bench in time; the count measured is printed).
struct Pair {
  Series base;
  Series proxied;
  int proxied_requests = 0;  // made, warm-ups included (each is logged once)
};

// Small requests (or the big one) on one keep-alive connection per side,
// after `warmup` unmeasured ones; a pair of requests starts at most every
// `pace`.
absl::Status MeasureKeepAlive(const Connector& connect, const Side& base, const Side& proxied,
                              absl::string_view path, const std::string& expected, int warmup,
                              int runs, Clock::duration pace, Clock::time_point deadline,
                              Pair* out) {
  absl::StatusOr<std::unique_ptr<Client>> cb = connect(base);
  if (!cb.ok()) return cb.status();
  absl::StatusOr<std::unique_ptr<Client>> cp = connect(proxied);
  if (!cp.ok()) return cp.status();
  Clock::time_point next = Clock::now();
  for (int i = 0; i < warmup + runs && (i < warmup || Clock::now() < deadline); ++i) {
    std::this_thread::sleep_until(next);
    next = std::max(next + pace, Clock::now());
    for (int k = 0; k < 2; ++k) {
      const bool proxy = (k == 0) == (i % 2 == 0);
      Timing t;
      if (proxy) ++out->proxied_requests;
      absl::Status st = (proxy ? **cp : **cb).Get(path, expected, &t);
      if (!st.ok()) return st;
      if (i < warmup) continue;
      Series* s = proxy ? &out->proxied : &out->base;
      s->ttfb_us.push_back(t.ttfb_us);
      s->total_us.push_back(t.total_us);
    }
  }
  return absl::OkStatus();
}

// A small request on a new connection each, timed from connect to the last
// body byte.
absl::Status MeasureNewConnections(const Connector& connect, const Side& base, const Side& proxied,
                                   const std::string& expected, int warmup, int runs,
                                   Clock::time_point deadline, Pair* out) {
  for (int i = 0; i < warmup + runs && (i < warmup || Clock::now() < deadline); ++i) {
    for (int k = 0; k < 2; ++k) {
      const bool proxy = (k == 0) == (i % 2 == 0);
      const Clock::time_point start = Clock::now();
      absl::StatusOr<std::unique_ptr<Client>> c = connect(proxy ? proxied : base);
      if (!c.ok()) return c.status();
      Timing t;
      if (proxy) ++out->proxied_requests;
      absl::Status st = (*c)->Get("/small", expected, &t);
      if (!st.ok()) return st;
      const double total = Micros(Clock::now() - start);
      c->reset();  // closed before the next one starts
      if (i < warmup) continue;
      Series* s = proxy ? &out->proxied : &out->base;
      s->ttfb_us.push_back(t.ttfb_us);
      s->total_us.push_back(total);
    }
  }
  return absl::OkStatus();
}

const char* Verdict(bool met) { return met ? "met" : "MISSED"; }

std::string Capped(const Series& s, int runs) {
  if (static_cast<int>(s.total_us.size()) >= runs) return "";
  return absl::StrCat(" [time cap: ", s.total_us.size(), " of ", runs, " measured]");
}

void PrintStreamed(const Pair& pr, int runs) {
  auto print = [](const char* label, Series s) {
    double sum_s = 0;
    for (double us : s.total_us) sum_s += us / 1e6;
    const double mib_s = sum_s > 0 ? static_cast<double>(s.total_us.size()) / sum_s : 0;
    std::printf(
        "    %-8s ttfb p50 %8.1f us  p99 %8.1f us   whole p50 %8.1f us  p99 %8.1f us  "
        "%7.1f MiB/s\n",
        label, Percentile(s.ttfb_us, 0.5), Percentile(s.ttfb_us, 0.99), Percentile(s.total_us, 0.5),
        Percentile(s.total_us, 0.99), mib_s);
    return mib_s;
  };
  const double mib_b = print("direct", pr.base);
  const double mib_p = print("proxied", pr.proxied);
  Series b = pr.base;
  Series p = pr.proxied;
  const double added_ms = (Percentile(p.ttfb_us, 0.5) - Percentile(b.ttfb_us, 0.5)) / 1000.0;
  std::printf(
      "    ttfb added p50 %.3f ms (target: at most %.1f ms: %s); throughput %.2fx of "
      "direct; whole-response ratio p50 %.2fx%s\n",
      added_ms, kTtfbAddedTargetMs, Verdict(added_ms <= kTtfbAddedTargetMs),
      mib_b > 0 ? mib_p / mib_b : 0, Percentile(p.total_us, 0.5) / Percentile(b.total_us, 0.5),
      Capped(pr.proxied, runs).c_str());
}

void PrintLatency(const Pair& pr, int runs) {
  Series b = pr.base;
  Series p = pr.proxied;
  std::printf("    %-8s p50 %9.1f us   p99 %9.1f us\n", "direct", Percentile(b.total_us, 0.5),
              Percentile(b.total_us, 0.99));
  std::printf("    %-8s p50 %9.1f us   p99 %9.1f us\n", "proxied", Percentile(p.total_us, 0.5),
              Percentile(p.total_us, 0.99));
  const double r50 = Percentile(p.total_us, 0.5) / Percentile(b.total_us, 0.5);
  const double r99 = Percentile(p.total_us, 0.99) / Percentile(b.total_us, 0.99);
  std::printf(
      "    ratio    p50 %8.2fx      p99 %8.2fx      added p50 %.1f us  p99 %.1f us "
      "(target: at most %.1fx: p50 %s, p99 %s)%s\n",
      r50, r99, Percentile(p.total_us, 0.5) - Percentile(b.total_us, 0.5),
      Percentile(p.total_us, 0.99) - Percentile(b.total_us, 0.99), kLatencyRatioTarget,
      Verdict(r50 <= kLatencyRatioTarget), Verdict(r99 <= kLatencyRatioTarget),
      Capped(pr.proxied, runs).c_str());
}

// The three workloads for one protocol; returns the proxied requests made.
absl::StatusOr<int> MeasureProtocol(const char* protocol, const Connector& connect,
                                    const Side& base, const Side& proxied, const std::string& big,
                                    const std::string& small, Clock::duration small_pace,
                                    const std::string& workloads) {
  std::printf("%s:\n", protocol);
  Pair streamed;
  Pair keepalive;
  Pair fresh;
  if (absl::StrContains(workloads, 'a')) {
    LAZ_RETURN_IF_ERROR(MeasureKeepAlive(connect, base, proxied, "/big", big, kBigWarmup, kBigRuns,
                                         Clock::duration::zero(), Clock::now() + kWorkloadCap,
                                         &streamed));
    std::printf(
        "  (a) 1 MiB streamed response (upstream writes of %zu KiB), %d per side on one "
        "keep-alive connection each:\n",
        kBigPiece / 1024, kBigRuns);
    PrintStreamed(streamed, kBigRuns);
  }
  if (absl::StrContains(workloads, 'b')) {
    LAZ_RETURN_IF_ERROR(MeasureKeepAlive(connect, base, proxied, "/small", small, kSmallWarmup,
                                         kSmallRuns, small_pace, Clock::now() + kWorkloadCap,
                                         &keepalive));
    std::printf(
        "  (b) %d small requests (%zu-byte answers) per side on one keep-alive connection "
        "each, request written to last byte read%s:\n",
        kSmallRuns, kSmallBytes,
        small_pace > Clock::duration::zero()
            ? absl::StrCat(", at most ", kSmallPerSecond, " a second a side").c_str()
            : ", back to back");
    PrintLatency(keepalive, kSmallRuns);
  }
  if (absl::StrContains(workloads, 'c')) {
    LAZ_RETURN_IF_ERROR(MeasureNewConnections(connect, base, proxied, small, kConnWarmup, kConnRuns,
                                              Clock::now() + kWorkloadCap, &fresh));
    std::printf(
        "  (c) %d small requests per side on a new connection each, connect to last byte "
        "(proxied: with the proxy's upstream dial and handshake):\n",
        kConnRuns);
    PrintLatency(fresh, kConnRuns);
  }
  return streamed.proxied_requests + keepalive.proxied_requests + fresh.proxied_requests;
}

int Run(bool proxy_nodelay, bool unpaced, const std::string& workloads,
        const std::string& protocols) {
  const Clock::time_point bench_start = Clock::now();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows under ctest too
  test::TempDir dir("laz-egb");
  Errors errors;
  const std::string big = MakeBody(kBigBytes, 1);
  const std::string small = MakeBody(kSmallBytes, 2);
  auto fail = [&](const absl::Status& st) {
    std::fflush(stdout);
    std::fprintf(stderr, "egress_proxy_bench: FAIL: %s\n", std::string(st.message()).c_str());
    if (errors.count() > 0) {
      std::fprintf(stderr, "egress_proxy_bench: first upstream error: %s\n",
                   errors.first().c_str());
    }
    return 1;
  };

  absl::StatusOr<std::unique_ptr<Upstream>> upstream =
      Upstream::Create(dir.path(), &errors, &big, &small);
  if (!upstream.ok()) return fail(upstream.status());

  // The proxy: the session CA (what the sandbox trusts), the guard with
  // one secret for kHost sent as x-api-key and an HTTP rule for the host
  // (so the rule check runs too), the loopback dialer, upstreams verified
  // against the upstream's test CA.
  absl::StatusOr<std::unique_ptr<SessionCa>> session_ca = SessionCa::Create("bench", {kHost});
  if (!session_ca.ok()) return fail(session_ca.status());
  const std::string session_ca_file = dir.path() + "/session-ca.pem";
  std::ofstream(session_ca_file) << (*session_ca)->CaPem();
  SecretSpec secret;
  secret.name = "vendor";
  secret.placeholder = kPlaceholder;
  secret.value = kValue;
  secret.hosts = {kHost};
  secret.inject = SecretSpec::Inject::kHeader;
  secret.header = kKeyHeader;
  RequestGuard guard({secret}, {{.host = kHost, .allow = {{"GET", "/"}}}});
  LoopbackDialer dialer((*upstream)->port(), proxy_nodelay);
  std::atomic<int> logged{0};
  std::atomic<int> logged_wrong{0};
  ConnectionContext ctx;
  ctx.guard = &guard;
  ctx.ca = session_ca->get();
  ctx.dialer = &dialer;
  ctx.log = [&](RequestRecord r) {
    logged.fetch_add(1);
    if (!r.refused.empty() || r.status != 200 || r.secrets != std::vector<std::string>{"vendor"}) {
      logged_wrong.fetch_add(1);
    }
  };
  ctx.trust = {.ca_file = (*upstream)->ca_file()};
  absl::StatusOr<std::unique_ptr<Acceptor>> proxy =
      Acceptor::Create("proxy", [&ctx, proxy_nodelay](fs::UniqueFd fd) {
        if (proxy_nodelay) SetNoDelay(fd.get());
        ServeConnection(std::move(fd), kHttpsPort, ctx);
      });
  if (!proxy.ok()) return fail(proxy.status());

  // One client context for both sides: it trusts the upstream's CA (the
  // baseline) and the session CA (the proxy), as the sandbox's store does.
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> cctx(SSL_CTX_new(TLS_client_method()),
                                                         &SSL_CTX_free);
  if (cctx == nullptr) return fail(absl::InternalError("SSL_CTX_new failed"));
  SSL_CTX_set_min_proto_version(cctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(cctx.get(), SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(cctx.get(), (*upstream)->ca_file().c_str(), nullptr) != 1 ||
      SSL_CTX_load_verify_locations(cctx.get(), session_ca_file.c_str(), nullptr) != 1) {
    return fail(absl::InternalError("cannot load the bench's CAs"));
  }
  const Side base{"direct", (*upstream)->port(), kValue, kValue};
  const Side proxied{"proxied", (*proxy)->port(), kPlaceholder, RedactionMask(sizeof(kValue) - 1)};

  std::printf(
      "egress_proxy_bench: TLS 1.3 on loopback; direct = the client to the upstream, "
      "proxied = the same client through ServeConnection (one secret injected as %s, "
      "redacted from responses)%s\n",
      kKeyHeader, proxy_nodelay ? "; the proxy's sockets have TCP_NODELAY" : "");
  int proxied_requests = 0;
  const Connector h1 = [&](const Side& side) { return Http1Client::Connect(cctx.get(), side); };
  const Connector h2 = [&](const Side& side) { return Http2Client::Connect(cctx.get(), side); };
  for (const auto& [name, connect] :
       std::vector<std::pair<const char*, Connector>>{{"HTTP/1.1", h1}, {"HTTP/2", h2}}) {
    if (!absl::StrContains(protocols, name == std::string("HTTP/2") ? '2' : '1')) continue;
    absl::StatusOr<int> made = MeasureProtocol(
        name, connect, base, proxied, big, small,
        unpaced ? Clock::duration::zero() : std::chrono::microseconds(1'000'000 / kSmallPerSecond),
        workloads);
    if (!made.ok()) return fail(made.status());
    proxied_requests += *made;
  }

  proxy->reset();  // every proxied connection has ended; their records are written
  upstream->reset();
  if (errors.count() > 0) {
    return fail(absl::DataLossError(absl::StrCat(errors.count(), " upstream errors")));
  }
  if (logged.load() != proxied_requests || logged_wrong.load() != 0) {
    return fail(absl::DataLossError(
        absl::StrCat("the proxy logged ", logged.load(), " requests (", logged_wrong.load(),
                     " refused, failed or without the secret), expected ", proxied_requests,
                     " with the secret injected")));
  }
  std::printf("whole bench: %.1f s\n",
              std::chrono::duration<double>(Clock::now() - bench_start).count());
  return 0;
}

}  // namespace
}  // namespace lazaret::egressd::bench

// --proxy-nodelay: the proxy's two sockets of each connection get
// TCP_NODELAY from the bench (the proxy sets none itself), to measure what
// that change to the proxy would bring.
// --unpaced: workload (b) back to back, beyond the proxy's HTTP/2 budget
// of new streams a second.
// --only=<workloads><protocols>, e.g. --only=b1 or --only=a2: some of the
// measurements (to profile one).
int main(int argc, char** argv) {
  bool proxy_nodelay = false;
  bool unpaced = false;
  std::string workloads = "abc";
  std::string protocols = "12";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--proxy-nodelay") {
      proxy_nodelay = true;
    } else if (arg == "--unpaced") {
      unpaced = true;
    } else if (absl::StartsWith(arg, "--only=")) {
      const std::string only = arg.substr(7);
      workloads.clear();
      protocols.clear();
      for (char c : only) (c == '1' || c == '2' ? protocols : workloads).push_back(c);
      if (workloads.empty()) workloads = "abc";
      if (protocols.empty()) protocols = "12";
    } else {
      std::fprintf(stderr,
                   "usage: egress_proxy_bench [--proxy-nodelay] [--unpaced] [--only=[abc][12]]\n");
      return 2;
    }
  }
  return lazaret::egressd::bench::Run(proxy_nodelay, unpaced, workloads, protocols);
}
