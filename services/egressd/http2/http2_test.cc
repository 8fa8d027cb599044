// ServeHttp2 between real nghttp2 peers: a client session in the test
// thread, ServeHttp2 in a thread of its own, and a fake upstream (an
// nghttp2 server session per upstream connection, in its own thread), all
// over socketpairs carrying plain HTTP/2 (prior knowledge). Hostile
// clients write raw frames.
#include "services/egressd/http2/http2.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "services/egressd/guard.h"
#include "tests/support/test_support.h"

namespace lazaret::egressd {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr char kHost[] = "api.example.com";
constexpr char kPlaceholder[] = "lzs-0123456789abcdef0123456789abcdef";
constexpr char kSecretValue[] = "sk-live-REAL-KEY-4f1c2b9e77";

// A ByteStream over a non-blocking socket.
class PlainStream : public ByteStream {
 public:
  explicit PlainStream(int fd) : fd_(fd) { fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK); }
  ~PlainStream() override { close(fd_); }

  IoStatus Read(char* buf, size_t cap, size_t* done) override {
    ssize_t n = recv(fd_, buf, cap, 0);
    if (n > 0) {
      *done = static_cast<size_t>(n);
      return IoStatus::kOk;
    }
    if (n == 0) return IoStatus::kClosed;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      want_ = POLLIN;
      return IoStatus::kAgain;
    }
    return IoStatus::kError;
  }
  IoStatus Write(const char* data, size_t len, size_t* done) override {
    ssize_t n = send(fd_, data, len, MSG_NOSIGNAL);
    if (n >= 0) {
      *done = static_cast<size_t>(n);
      return n > 0 ? IoStatus::kOk : IoStatus::kAgain;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      want_ = POLLOUT;
      return IoStatus::kAgain;
    }
    return IoStatus::kError;
  }
  void ShutdownWrite() override { shutdown(fd_, SHUT_WR); }
  int fd() const override { return fd_; }
  short WantEvents() const override { return want_; }
  bool HasBuffered() const override { return false; }

 private:
  int fd_;
  short want_ = POLLIN;
};

std::pair<int, int> SocketPair() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) abort();
  return {sv[0], sv[1]};
}

// Points into `name` and `value`, which must outlive the submission.
nghttp2_nv Nv(absl::string_view name, absl::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// Drives one nghttp2 session over a non-blocking socket.
class SessionLoop {
 public:
  explicit SessionLoop(int fd) : fd_(fd) { fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK); }
  ~SessionLoop() {
    if (session_ != nullptr) nghttp2_session_del(session_);
    close(fd_);
  }
  nghttp2_session* session() { return session_; }
  bool eof() const { return eof_; }
  // While paused the loop neither reads nor writes (a reader that stalls).
  bool paused = false;

  // One turn: waits up to `timeout` for the socket, reads and writes what
  // it can. False once the peer is gone and nothing is left to do.
  bool Turn(std::chrono::milliseconds timeout) {
    if (paused) {
      std::this_thread::sleep_for(timeout);
      return true;
    }
    Flush();
    pollfd p{fd_, static_cast<short>(POLLIN | (out_.size() > off_ ? POLLOUT : 0)), 0};
    if (!eof_) poll(&p, 1, static_cast<int>(timeout.count()));
    if (!eof_ && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[16384];
      for (int i = 0; i < 8; ++i) {
        ssize_t n = recv(fd_, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          eof_ = true;
          break;
        }
        if (n < 0) break;
        if (nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(buf),
                                     static_cast<size_t>(n)) < 0) {
          eof_ = true;
          break;
        }
      }
    }
    Flush();
    return !eof_;
  }

  void Flush() {
    if (eof_) return;
    while (true) {
      while (out_.size() - off_ < 256 * 1024) {
        const uint8_t* data;
        ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n <= 0) break;
        out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
      }
      if (off_ == out_.size()) return;
      ssize_t n = send(fd_, out_.data() + off_, out_.size() - off_, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) eof_ = true;
        return;
      }
      off_ += static_cast<size_t>(n);
      if (off_ == out_.size()) {
        out_.clear();
        off_ = 0;
      }
    }
  }

  bool Idle() {
    return nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
  }

 protected:
  int fd_;
  nghttp2_session* session_ = nullptr;
  std::string out_;
  size_t off_ = 0;
  bool eof_ = false;
};

// ---- The fake upstream ---------------------------------------------------

// What the upstream saw of one request.
struct SeenRequest {
  std::map<std::string, std::string> headers;  // pseudo-headers included
  std::string body;
};

// Shared between the test and its upstream threads.
struct UpstreamWorld {
  std::mutex mu;
  std::vector<SeenRequest> requests;
  int connections = 0;
  // Server-sent events: the upstream sends event i+1 only once the client
  // saw event i (client_events), so nothing between can have buffered it.
  std::atomic<int> client_events{0};
  std::atomic<int> sse_waits_timed_out{0};
  // Bytes the upstream's /big handler produced.
  std::atomic<uint64_t> big_produced{0};
};

// One upstream connection: an nghttp2 server session. Paths:
//   /echo         200 once the request ended; body = "name: value\n" per
//                 request header, a blank line, the request body; each
//                 request header also comes back as x-echo-<name>
//   /sse?n=N      text/event-stream, N events paced by the client
//   /big?n=N      N bytes of 'x', produced as the window allows
//   /trailers     "ok" and a trailer x-check echoing x-api-key
//   /bigheaders   200 with ~40 KB of header fields
//   /gzip         200 with content-encoding gzip
//   /goaway       GOAWAY (last stream 0) and the connection closes
//   anything else 404
class FakeUpstream : public SessionLoop {
 public:
  FakeUpstream(int fd, UpstreamWorld* world) : SessionLoop(fd), world_(world) {
    nghttp2_session_callbacks* cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(cb, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, OnFrameRecv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnClose);
    nghttp2_session_server_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }

  void Run() {
    while (!stop_) {
      if (!Turn(5ms) && out_.empty()) break;
      if (Idle()) break;
      Pace();
    }
  }

 private:
  struct Stream {
    SeenRequest seen;
    std::string out;
    size_t off = 0;
    bool eof = false;
    bool deferred = false;
    std::vector<std::pair<std::string, std::string>> trailers;
    // /sse
    int sse_total = 0;
    int sse_sent = 0;
    Clock::time_point sse_wait_start{};
    // /big
    uint64_t big_left = 0;
  };

  static FakeUpstream* Self(void* user) { return static_cast<FakeUpstream*>(user); }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      Self(user)->streams_[frame->hd.stream_id] = std::make_unique<Stream>();
    }
    return 0;
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    auto it = Self(user)->streams_.find(frame->hd.stream_id);
    if (it == Self(user)->streams_.end()) return 0;
    it->second->seen.headers[std::string(reinterpret_cast<const char*>(name), namelen)] =
        std::string(reinterpret_cast<const char*>(value), valuelen);
    return 0;
  }
  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                    void* user) {
    auto it = Self(user)->streams_.find(id);
    if (it != Self(user)->streams_.end()) {
      it->second->seen.body.append(reinterpret_cast<const char*>(data), len);
    }
    return 0;
  }
  static int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    FakeUpstream* self = Self(user);
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    auto it = self->streams_.find(frame->hd.stream_id);
    if (it == self->streams_.end()) return 0;
    self->Respond(session, frame->hd.stream_id, *it->second);
    return 0;
  }
  static int OnClose(nghttp2_session*, int32_t id, uint32_t, void* user) {
    Self(user)->streams_.erase(id);
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source*, void* user) {
    FakeUpstream* self = Self(user);
    auto it = self->streams_.find(id);
    if (it == self->streams_.end()) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    Stream& s = *it->second;
    if (s.big_left > 0) {
      size_t n = std::min<uint64_t>(length, s.big_left);
      memset(buf, 'x', n);
      s.big_left -= n;
      self->world_->big_produced += n;
      if (s.big_left == 0) *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    }
    size_t n = std::min(length, s.out.size() - s.off);
    memcpy(buf, s.out.data() + s.off, n);
    s.off += n;
    if (s.off == s.out.size() && s.eof) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      if (!s.trailers.empty()) {
        std::vector<nghttp2_nv> nva;
        for (auto& [k, v] : s.trailers) nva.push_back(Nv(k, v));
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_submit_trailer(self->session_, id, nva.data(), nva.size());
      }
      return static_cast<ssize_t>(n);
    }
    if (n == 0) {
      s.deferred = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(n);
  }

  void Respond(nghttp2_session* session, int32_t id, Stream& s) {
    {
      std::lock_guard<std::mutex> lock(world_->mu);
      world_->requests.push_back(s.seen);
    }
    std::string path = s.seen.headers[":path"];
    std::vector<std::pair<std::string, std::string>> headers = {{":status", "200"}};
    if (path == "/goaway") {
      nghttp2_session_terminate_session2(session, 0, NGHTTP2_NO_ERROR);
      return;
    }
    if (path == "/echo" || absl::StartsWith(path, "/echo?")) {
      for (auto& [k, v] : s.seen.headers) {
        if (k[0] == ':') continue;
        s.out += absl::StrCat(k, ": ", v, "\n");
        headers.push_back({"x-echo-" + k, v});
      }
      s.out += "\n" + s.seen.body;
      headers.push_back({"content-length", std::to_string(s.out.size())});
      s.eof = true;
    } else if (absl::StartsWith(path, "/sse?n=")) {
      int n = 0;
      if (!absl::SimpleAtoi(path.substr(7), &n)) n = 1;
      s.sse_total = n;
      headers.push_back({"content-type", "text/event-stream"});
    } else if (absl::StartsWith(path, "/big?n=")) {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(path.substr(7), &n)) n = 1;
      s.big_left = n;
    } else if (path == "/bigheaders") {
      for (int i = 0; i < 40; ++i)
        headers.push_back({absl::StrCat("x-h", i), std::string(1000, 'h')});
      s.eof = true;
    } else if (path == "/gzip") {
      headers.push_back({"content-encoding", "gzip"});
      s.out = "not really gzip";
      s.eof = true;
    } else if (path == "/trailers") {
      s.out = "ok";
      s.eof = true;
      s.trailers.push_back({"x-check", s.seen.headers["x-api-key"]});
    } else {
      headers[0].second = "404";
      s.out = "not found";
      s.eof = true;
    }
    std::vector<nghttp2_nv> nva;
    for (auto& [k, v] : headers) nva.push_back(Nv(k, v));
    nghttp2_data_provider provider;
    provider.read_callback = ReadBody;
    provider.source.ptr = nullptr;
    nghttp2_submit_response(session, id, nva.data(), nva.size(), &provider);
  }

  // Sends the next server-sent event once the client saw the previous one.
  void Pace() {
    for (auto& [id, s] : streams_) {
      if (s->sse_total == 0 || s->sse_sent == s->sse_total) continue;
      Clock::time_point now = Clock::now();
      if (s->sse_sent > 0 && world_->client_events.load() < s->sse_sent) {
        if (now - s->sse_wait_start < 5s) continue;
        ++world_->sse_waits_timed_out;
      }
      s->out += absl::StrCat("data: event ", s->sse_sent, "\n\n");
      ++s->sse_sent;
      s->sse_wait_start = now;
      if (s->sse_sent == s->sse_total) s->eof = true;
      if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(session_, id);
      }
    }
  }

  UpstreamWorld* world_;
  std::map<int32_t, std::unique_ptr<Stream>> streams_;
  bool stop_ = false;
};

// ---- The test client -----------------------------------------------------

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::map<std::string, std::string> trailers;
  std::string body;
  bool closed = false;
  uint32_t error_code = 0;
};

class TestClient : public SessionLoop {
 public:
  explicit TestClient(int fd, UpstreamWorld* world = nullptr) : SessionLoop(fd), world_(world) {
    nghttp2_session_callbacks* cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, OnHeader);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, OnBeginHeaders);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnClose);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, OnFrameRecv);
    nghttp2_session_client_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }

  int32_t Submit(const std::string& method, const std::string& path,
                 std::vector<std::pair<std::string, std::string>> headers = {},
                 std::string body = "", const std::string& authority = kHost) {
    std::vector<std::pair<std::string, std::string>> all = {
        {":method", method}, {":scheme", "https"}, {":authority", authority}, {":path", path}};
    all.insert(all.end(), headers.begin(), headers.end());
    std::vector<nghttp2_nv> nva;
    for (auto& [k, v] : all) nva.push_back(Nv(k, v));
    auto body_state = std::make_shared<std::pair<std::string, size_t>>(std::move(body), 0);
    nghttp2_data_provider provider;
    provider.source.ptr = body_state.get();
    provider.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                                uint32_t* flags, nghttp2_data_source* source, void*) -> ssize_t {
      auto* b = static_cast<std::pair<std::string, size_t>*>(source->ptr);
      size_t n = std::min(length, b->first.size() - b->second);
      memcpy(buf, b->first.data() + b->second, n);
      b->second += n;
      if (b->second == b->first.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    };
    bool has_body = !body_state->first.empty();
    int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(),
                                        has_body ? &provider : nullptr, nullptr);
    bodies_.push_back(body_state);
    responses[id];
    return id;
  }

  bool RunUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
    Clock::time_point end = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() > end) return false;
      if (!Turn(10ms) && !done()) return done();
    }
    return true;
  }

  bool Complete(int32_t id, std::chrono::milliseconds limit = 10s) {
    return RunUntil([&] { return responses[id].closed; }, limit);
  }

  std::map<int32_t, Response> responses;
  bool goaway = false;
  uint32_t goaway_code = 0;

 private:
  static TestClient* Self(void* user) { return static_cast<TestClient*>(user); }
  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto& r = Self(user)->responses[frame->hd.stream_id];
    Self(user)->in_trailers_ = r.status >= 200;
    return 0;
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    auto& r = Self(user)->responses[frame->hd.stream_id];
    std::string n(reinterpret_cast<const char*>(name), namelen);
    std::string v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":status") {
      r.status = std::stoi(v);
    } else if (Self(user)->in_trailers_) {
      r.trailers[n] = v;
    } else {
      r.headers[n] = v;
    }
    return 0;
  }
  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                    void* user) {
    TestClient* self = Self(user);
    auto& r = self->responses[id];
    r.body.append(reinterpret_cast<const char*>(data), len);
    if (self->world_ != nullptr) {
      int events = 0;
      for (size_t pos = 0; (pos = r.body.find("\n\n", pos)) != std::string::npos; pos += 2) {
        ++events;
      }
      self->world_->client_events = events;
    }
    return 0;
  }
  static int OnClose(nghttp2_session*, int32_t id, uint32_t error_code, void* user) {
    auto& r = Self(user)->responses[id];
    r.closed = true;
    r.error_code = error_code;
    return 0;
  }
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      Self(user)->goaway = true;
      Self(user)->goaway_code = frame->goaway.error_code;
    }
    return 0;
  }

  UpstreamWorld* world_;
  bool in_trailers_ = false;
  std::vector<std::shared_ptr<std::pair<std::string, size_t>>> bodies_;
};

// ---- The proxy under test ------------------------------------------------

std::vector<SecretSpec> TestSecrets() {
  SecretSpec s;
  s.name = "anthropic";
  s.placeholder = kPlaceholder;
  s.value = kSecretValue;
  s.hosts = {kHost};
  s.inject = SecretSpec::Inject::kHeader;
  s.header = "x-api-key";
  return {s};
}

std::vector<vocab::HttpRule> TestRules() {
  vocab::HttpRule rule;
  rule.host = kHost;
  rule.allow = {{"GET", "/"}, {"POST", "/"}};
  return {rule};
}

// ServeHttp2 on one end of a socketpair, in a thread, with upstreams that
// are FakeUpstreams on socketpairs of their own.
class Http2ProxyTest : public ::testing::Test {
 protected:
  Http2ProxyTest() : guard_(TestSecrets(), TestRules()) {}
  ~Http2ProxyTest() override { Stop(); }

  // The client's end of the connection.
  int Start(Http2Limits limits = {}) {
    auto [client_fd, proxy_fd] = SocketPair();
    proxy_ = std::thread([this, proxy_fd = proxy_fd, limits] {
      PlainStream stream(proxy_fd);
      OpenUpstream open = [this]() -> absl::StatusOr<std::unique_ptr<ByteStream>> {
        ++opens_;
        if (fail_upstream_) return absl::UnavailableError("dial refused by the test");
        auto [ours, theirs] = SocketPair();
        {
          std::lock_guard<std::mutex> lock(world_.mu);
          ++world_.connections;
        }
        upstream_threads_.emplace_back([this, theirs = theirs] {
          FakeUpstream up(theirs, &world_);
          up.Run();
        });
        return std::make_unique<PlainStream>(ours);
      };
      RequestLogSink log = [this](RequestRecord r) {
        std::lock_guard<std::mutex> lock(log_mu_);
        records_.push_back(std::move(r));
      };
      ServeHttp2(stream, kHost, open, guard_, log, limits);
      served_ = true;
    });
    return client_fd;
  }

  void Stop() {
    if (proxy_.joinable()) proxy_.join();
    for (auto& t : upstream_threads_) t.join();
    upstream_threads_.clear();
  }

  std::vector<RequestRecord> Records() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return records_;
  }

  RequestGuard guard_;
  UpstreamWorld world_;
  std::atomic<int> opens_{0};
  std::atomic<bool> fail_upstream_{false};
  std::atomic<bool> served_{false};
  std::thread proxy_;
  std::vector<std::thread> upstream_threads_;  // touched by the proxy thread only
  std::mutex log_mu_;
  std::vector<RequestRecord> records_;
};

TEST_F(Http2ProxyTest, InjectsTheSecretUpstreamAndRedactsItsEchoInHeadersAndBody) {
  {
    TestClient client(Start(), &world_);
    int32_t id = client.Submit("POST", "/echo", {{"x-api-key", kPlaceholder}}, "hello body");
    ASSERT_TRUE(client.Complete(id));
    const Response& r = client.responses[id];
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.error_code, 0u);
    std::string mask = RedactionMask(strlen(kSecretValue));
    EXPECT_EQ(r.headers.at("x-echo-x-api-key"), mask);
    EXPECT_TRUE(absl::StrContains(r.body, absl::StrCat("x-api-key: ", mask, "\n"))) << r.body;
    EXPECT_TRUE(absl::StrContains(r.body, "\nhello body")) << r.body;
    EXPECT_FALSE(absl::StrContains(r.body, kSecretValue));
    EXPECT_FALSE(absl::StrContains(r.body, kPlaceholder));
    // The length still holds: the mask has the value's length.
    EXPECT_EQ(r.headers.at("content-length"), std::to_string(r.body.size()));
  }
  Stop();
  {
    std::lock_guard<std::mutex> lock(world_.mu);
    ASSERT_EQ(world_.requests.size(), 1u);
    const SeenRequest& seen = world_.requests[0];
    EXPECT_EQ(seen.headers.at("x-api-key"), kSecretValue);
    EXPECT_EQ(seen.headers.at(":authority"), kHost);
    EXPECT_EQ(seen.headers.at(":scheme"), "https");
    EXPECT_EQ(seen.body, "hello body");
  }
  std::vector<RequestRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].protocol, "HTTP/2");
  EXPECT_EQ(records[0].host, kHost);
  EXPECT_EQ(records[0].method, "POST");
  EXPECT_EQ(records[0].path, "/echo");
  EXPECT_EQ(records[0].status, 200);
  EXPECT_EQ(records[0].request_bytes, 10u);
  EXPECT_GT(records[0].response_bytes, 0u);
  EXPECT_EQ(records[0].secrets, std::vector<std::string>{"anthropic"});
  EXPECT_EQ(records[0].rule, "http \"api.example.com\": POST /");
  EXPECT_TRUE(records[0].refused.empty());
}

TEST_F(Http2ProxyTest, TrailersAreForwardedRedacted) {
  TestClient client(Start(), &world_);
  int32_t id = client.Submit("GET", "/trailers", {{"x-api-key", kPlaceholder}});
  ASSERT_TRUE(client.Complete(id));
  const Response& r = client.responses[id];
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(r.trailers.at("x-check"), RedactionMask(strlen(kSecretValue)));
}

TEST_F(Http2ProxyTest, CompressedResponseToARequestWithASecretIsRefused) {
  TestClient client(Start(), &world_);
  int32_t with_secret = client.Submit("GET", "/gzip", {{"x-api-key", kPlaceholder}});
  ASSERT_TRUE(client.Complete(with_secret));
  EXPECT_EQ(client.responses[with_secret].status, 502);
  EXPECT_FALSE(absl::StrContains(client.responses[with_secret].body, "not really gzip"));
  // Without a secret there is nothing to redact: the response passes.
  int32_t plain = client.Submit("GET", "/gzip");
  ASSERT_TRUE(client.Complete(plain));
  EXPECT_EQ(client.responses[plain].status, 200);
  EXPECT_EQ(client.responses[plain].body, "not really gzip");
  std::lock_guard<std::mutex> lock(world_.mu);
  ASSERT_EQ(world_.requests.size(), 2u);
  EXPECT_EQ(world_.requests[0].headers.at("accept-encoding"), "identity");
}

TEST_F(Http2ProxyTest, RefusedRequestGets403WithTheRuleAndNeverReachesUpstream) {
  {
    TestClient client(Start(), &world_);
    int32_t id = client.Submit("DELETE", "/v1/thing");
    ASSERT_TRUE(client.Complete(id));
    const Response& r = client.responses[id];
    EXPECT_EQ(r.status, 403);
    EXPECT_EQ(r.headers.at("content-type"), "text/plain; charset=utf-8");
    EXPECT_TRUE(absl::StrContains(r.body, "allows only GET /, POST /")) << r.body;
    // The placeholder headed to the wrong header is refused too.
    int32_t id2 = client.Submit("GET", "/", {{"x-other", kPlaceholder}});
    ASSERT_TRUE(client.Complete(id2));
    EXPECT_EQ(client.responses[id2].status, 403);
  }
  Stop();
  EXPECT_EQ(opens_.load(), 0);
  std::vector<RequestRecord> records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].status, 403);
  EXPECT_FALSE(records[0].refused.empty());
  EXPECT_TRUE(absl::StrContains(records[0].rule, "no entry admits")) << records[0].rule;
}

TEST_F(Http2ProxyTest, AuthorityOfAnotherHostGets421) {
  TestClient client(Start(), &world_);
  int32_t other = client.Submit("GET", "/echo", {}, "", "evil.example.com");
  int32_t with_port = client.Submit("GET", "/echo", {}, "", "API.Example.com:443");
  int32_t bad_host = client.Submit("GET", "/echo", {{"host", "evil.example.com"}});
  int32_t nul = client.Submit("GET", "/echo", {}, "", std::string("api.example.com\0x", 17));
  ASSERT_TRUE(client.RunUntil([&] {
    return client.responses[other].closed && client.responses[with_port].closed &&
           client.responses[bad_host].closed && client.responses[nul].closed;
  }));
  EXPECT_EQ(client.responses[other].status, 421);
  EXPECT_EQ(client.responses[with_port].status, 200);
  EXPECT_EQ(client.responses[bad_host].status, 421);
  // nghttp2 refuses a NUL in :authority itself (stream reset), or the proxy
  // answers 421: either way no upstream request.
  EXPECT_NE(client.responses[nul].status, 200);
  std::lock_guard<std::mutex> lock(world_.mu);
  EXPECT_EQ(world_.requests.size(), 1u);
}

TEST_F(Http2ProxyTest, ConnectIsNeverForwarded) {
  TestClient client(Start(), &world_);
  // A tunnel stays open for its bytes: no END_STREAM on the HEADERS.
  nghttp2_data_provider tunnel;
  tunnel.source.ptr = nullptr;
  tunnel.read_callback = [](nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*,
                            nghttp2_data_source*,
                            void*) -> ssize_t { return NGHTTP2_ERR_DEFERRED; };
  std::vector<nghttp2_nv> connect = {Nv(":method", "CONNECT"),
                                     Nv(":authority", "api.example.com:443")};
  // Extended CONNECT (RFC 8441): the proxy never enables it, so nghttp2
  // refuses :protocol, and the proxy would answer 405.
  std::vector<nghttp2_nv> extended = {Nv(":method", "CONNECT"), Nv(":protocol", "websocket"),
                                      Nv(":scheme", "https"), Nv(":authority", kHost),
                                      Nv(":path", "/chat")};
  std::vector<int32_t> ids;
  for (auto* nva : {&connect, &extended}) {
    ids.push_back(nghttp2_submit_request(client.session(), nullptr, nva->data(), nva->size(),
                                         &tunnel, nullptr));
    ASSERT_GT(ids.back(), 0);
  }
  for (int32_t id : ids) {
    ASSERT_TRUE(client.RunUntil(
        [&] { return client.responses[id].status != 0 || client.responses[id].closed; }));
    // Refused by nghttp2's own checks (a stream reset) or by the proxy (405).
    const Response& r = client.responses[id];
    EXPECT_TRUE(r.status == 405 || (r.status == 0 && r.error_code != 0))
        << r.status << " " << r.error_code;
  }
  EXPECT_EQ(opens_.load(), 0);
}

TEST_F(Http2ProxyTest, ServerSentEventsArriveOneByOne) {
  TestClient client(Start(), &world_);
  int32_t id = client.Submit("GET", "/sse?n=20");
  ASSERT_TRUE(client.Complete(id, 30s));
  EXPECT_EQ(client.responses[id].status, 200);
  EXPECT_EQ(world_.client_events.load(), 20);
  // Each event left the upstream only after the client had the one before.
  EXPECT_EQ(world_.sse_waits_timed_out.load(), 0);
}

TEST_F(Http2ProxyTest, PlaceholderInTheBodyResetsBothStreams) {
  TestClient client(Start(), &world_);
  std::string body = std::string(100000, 'a') + kPlaceholder + std::string(1000, 'b');
  int32_t id = client.Submit("POST", "/echo", {}, body);
  ASSERT_TRUE(client.Complete(id));
  EXPECT_NE(client.responses[id].error_code, 0u);
  EXPECT_EQ(client.responses[id].status, 0);
  // The connection still serves.
  int32_t next = client.Submit("GET", "/echo");
  ASSERT_TRUE(client.Complete(next));
  EXPECT_EQ(client.responses[next].status, 200);
  client.RunUntil([&] { return Records().size() == 2; }, 2s);
  std::vector<RequestRecord> records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(absl::StrContains(records[0].refused, "secret \"anthropic\" in the request body"))
      << records[0].refused;
}

TEST_F(Http2ProxyTest, UpstreamUnreachableGets502) {
  fail_upstream_ = true;
  TestClient client(Start(), &world_);
  int32_t id = client.Submit("GET", "/echo");
  ASSERT_TRUE(client.Complete(id));
  EXPECT_EQ(client.responses[id].status, 502);
  EXPECT_TRUE(absl::StrContains(client.responses[id].body, "dial refused by the test"));
  // A later request tries again.
  fail_upstream_ = false;
  int32_t next = client.Submit("GET", "/echo");
  ASSERT_TRUE(client.Complete(next));
  EXPECT_EQ(client.responses[next].status, 200);
  EXPECT_EQ(opens_.load(), 2);
}

TEST_F(Http2ProxyTest, UpstreamResponseHeadersBeyondTheLimitGive502) {
  Http2Limits limits;
  limits.max_header_list_bytes = 16 * 1024;
  TestClient client(Start(limits), &world_);
  int32_t id = client.Submit("GET", "/bigheaders");
  ASSERT_TRUE(client.Complete(id));
  EXPECT_EQ(client.responses[id].status, 502);
  EXPECT_TRUE(absl::StrContains(client.responses[id].body, "beyond the limit"))
      << client.responses[id].body;
  // The upstream connection still serves.
  int32_t next = client.Submit("GET", "/echo");
  ASSERT_TRUE(client.Complete(next));
  EXPECT_EQ(client.responses[next].status, 200);
}

TEST_F(Http2ProxyTest, UpstreamGoawayGives502AndANewUpstreamServesLaterRequests) {
  TestClient client(Start(), &world_);
  int32_t id = client.Submit("GET", "/goaway");
  ASSERT_TRUE(client.Complete(id));
  EXPECT_EQ(client.responses[id].status, 502);
  int32_t next = client.Submit("GET", "/echo");
  ASSERT_TRUE(client.Complete(next));
  EXPECT_EQ(client.responses[next].status, 200);
  EXPECT_EQ(opens_.load(), 2);
}

TEST_F(Http2ProxyTest, FiftyParallelStreams) {
  TestClient client(Start(), &world_);
  std::vector<int32_t> ids;
  for (int i = 0; i < 50; ++i) {
    ids.push_back(client.Submit("POST", absl::StrCat("/echo?i=", i), {{"x-n", std::to_string(i)}},
                                std::string(20000, static_cast<char>('a' + i % 26))));
  }
  ASSERT_TRUE(client.RunUntil(
      [&] {
        for (int32_t id : ids) {
          if (!client.responses[id].closed) return false;
        }
        return true;
      },
      30s));
  for (int i = 0; i < 50; ++i) {
    const Response& r = client.responses[ids[i]];
    EXPECT_EQ(r.status, 200) << i;
    EXPECT_TRUE(absl::StrContains(r.body, absl::StrCat("x-n: ", i, "\n"))) << i;
    EXPECT_TRUE(absl::StrContains(r.body, std::string(20000, static_cast<char>('a' + i % 26))));
  }
  EXPECT_EQ(opens_.load(), 1);
}

TEST_F(Http2ProxyTest, SlowReaderStallsTheUpstreamInsteadOfFillingTheProxy) {
  constexpr uint64_t kTotal = 16 * 1024 * 1024;
  TestClient client(Start(), &world_);
  int32_t id = client.Submit("GET", absl::StrCat("/big?n=", kTotal));
  ASSERT_TRUE(client.RunUntil([&] { return !client.responses[id].body.empty(); }));
  client.paused = true;
  client.Turn(1500ms);
  // Windows and socket buffers only: far below what the upstream could
  // send, were the proxy reading it all.
  uint64_t produced = world_.big_produced.load();
  EXPECT_LT(produced, 4u * 1024 * 1024);
  client.paused = false;
  ASSERT_TRUE(client.Complete(id, 60s));
  EXPECT_EQ(client.responses[id].body.size(), kTotal);
  EXPECT_EQ(client.responses[id].error_code, 0u);
}

TEST_F(Http2ProxyTest, IdleConnectionEnds) {
  Http2Limits limits;
  limits.idle_seconds = 1;
  TestClient client(Start(limits), &world_);
  Clock::time_point start = Clock::now();
  ASSERT_TRUE(client.RunUntil([&] { return client.eof(); }, 5s));
  EXPECT_LT(Clock::now() - start, 4s);
  EXPECT_TRUE(client.goaway);
  EXPECT_EQ(client.goaway_code, static_cast<uint32_t>(NGHTTP2_NO_ERROR));
}

// ---- Floods from raw frames ----------------------------------------------

std::string Frame(uint8_t type, uint8_t flags, int32_t stream, const std::string& payload) {
  std::string f;
  size_t len = payload.size();
  f.push_back(static_cast<char>(len >> 16));
  f.push_back(static_cast<char>(len >> 8));
  f.push_back(static_cast<char>(len));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  f.push_back(static_cast<char>((stream >> 24) & 0x7f));
  f.push_back(static_cast<char>(stream >> 16));
  f.push_back(static_cast<char>(stream >> 8));
  f.push_back(static_cast<char>(stream));
  return f + payload;
}

std::string Preface() {
  return std::string(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN) +
         Frame(NGHTTP2_SETTINGS, 0, 0, "");
}

// HPACK-encodes a header list with `deflater` (its dynamic table carries
// over between calls, as the peer's inflater's does).
std::string Encode(nghttp2_hd_deflater* deflater,
                   const std::vector<std::pair<std::string, std::string>>& headers) {
  std::vector<nghttp2_nv> nva;
  for (auto& [k, v] : headers) nva.push_back(Nv(k, v));
  std::string out(nghttp2_hd_deflate_bound(deflater, nva.data(), nva.size()), '\0');
  ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<uint8_t*>(out.data()), out.size(),
                                    nva.data(), nva.size());
  if (n < 0) abort();
  out.resize(static_cast<size_t>(n));
  return out;
}

std::vector<std::pair<std::string, std::string>> Request(const std::string& method,
                                                         const std::string& path) {
  return {{":method", method}, {":scheme", "https"}, {":authority", kHost}, {":path", path}};
}

struct FloodOutcome {
  bool goaway = false;
  uint32_t error_code = 0;
  bool ended = false;  // the proxy closed the connection
  std::chrono::milliseconds took{};
};

// Writes `attack` (a thread, ignoring write errors once the proxy hangs
// up) and reads the proxy's frames until EOF, noting its GOAWAY.
FloodOutcome Flood(int fd, std::string attack) {
  FloodOutcome outcome;
  Clock::time_point start = Clock::now();
  std::thread writer([fd, attack = std::move(attack)] {
    size_t off = 0;
    while (off < attack.size()) {
      ssize_t n =
          send(fd, attack.data() + off, std::min<size_t>(attack.size() - off, 65536), MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  });
  std::string in;
  char buf[65536];
  while (Clock::now() - start < 20s) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      outcome.ended = true;
      break;
    }
    in.append(buf, static_cast<size_t>(n));
  }
  outcome.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  shutdown(fd, SHUT_RDWR);
  writer.join();
  size_t off = 0;
  while (in.size() - off >= 9) {
    size_t len = (static_cast<uint8_t>(in[off]) << 16) | (static_cast<uint8_t>(in[off + 1]) << 8) |
                 static_cast<uint8_t>(in[off + 2]);
    uint8_t type = static_cast<uint8_t>(in[off + 3]);
    if (in.size() - off - 9 < len) break;
    if (type == NGHTTP2_GOAWAY && len >= 8) {
      outcome.goaway = true;
      const char* p = in.data() + off + 9 + 4;
      outcome.error_code = (static_cast<uint32_t>(static_cast<uint8_t>(p[0])) << 24) |
                           (static_cast<uint32_t>(static_cast<uint8_t>(p[1])) << 16) |
                           (static_cast<uint32_t>(static_cast<uint8_t>(p[2])) << 8) |
                           static_cast<uint32_t>(static_cast<uint8_t>(p[3]));
    }
    off += 9 + len;
  }
  close(fd);
  return outcome;
}

class Http2FloodTest : public Http2ProxyTest {
 protected:
  void ExpectCalm(const std::string& attack) {
    FloodOutcome o = Flood(Start(), attack);
    EXPECT_TRUE(o.goaway);
    EXPECT_EQ(o.error_code, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
    EXPECT_TRUE(o.ended);
    EXPECT_LT(o.took, 10s);
    Stop();
    EXPECT_TRUE(served_);
  }
};

TEST_F(Http2FloodTest, RapidResetEndsTheConnectionBeforeTheUpstreamSeesMuch) {
  nghttp2_hd_deflater* deflater;
  nghttp2_hd_deflate_new(&deflater, 4096);
  std::string attack = Preface();
  char rst[4] = {0, 0, 0, static_cast<char>(NGHTTP2_CANCEL)};
  for (int i = 0; i < 20000; ++i) {
    int32_t stream = 1 + 2 * i;
    attack += Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream,
                    Encode(deflater, Request("GET", "/echo")));
    attack += Frame(NGHTTP2_RST_STREAM, 0, stream, std::string(rst, 4));
  }
  nghttp2_hd_deflate_del(deflater);
  ExpectCalm(attack);
  std::lock_guard<std::mutex> lock(world_.mu);
  EXPECT_LT(world_.requests.size(), 200u);
  // Each stream that completed its headers is logged, within the budget.
  EXPECT_LT(Records().size(), 1000u);
}

TEST_F(Http2FloodTest, SettingsFlood) {
  std::string attack = Preface();
  for (int i = 0; i < 20000; ++i) attack += Frame(NGHTTP2_SETTINGS, 0, 0, "");
  ExpectCalm(attack);
}

TEST_F(Http2FloodTest, PingFlood) {
  std::string attack = Preface();
  for (int i = 0; i < 20000; ++i) attack += Frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
  ExpectCalm(attack);
}

TEST_F(Http2FloodTest, ContinuationFlood) {
  nghttp2_hd_deflater* deflater;
  nghttp2_hd_deflate_new(&deflater, 4096);
  std::string attack = Preface() + Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1,
                                         Encode(deflater, Request("GET", "/echo")));
  // Never END_HEADERS: each frame adds fields the proxy must decode.
  for (int i = 0; i < 10000; ++i) {
    attack += Frame(NGHTTP2_CONTINUATION, 0, 1,
                    Encode(deflater, {{absl::StrCat("x-pad-", i), std::string(900, 'c')}}));
  }
  nghttp2_hd_deflate_del(deflater);
  ExpectCalm(attack);
  EXPECT_EQ(opens_.load(), 0);
}

TEST_F(Http2FloodTest, EmptyContinuationFlood) {
  nghttp2_hd_deflater* deflater;
  nghttp2_hd_deflate_new(&deflater, 4096);
  std::string attack = Preface() + Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1,
                                         Encode(deflater, Request("GET", "/echo")));
  for (int i = 0; i < 100000; ++i) attack += Frame(NGHTTP2_CONTINUATION, 0, 1, "");
  nghttp2_hd_deflate_del(deflater);
  ExpectCalm(attack);
}

TEST_F(Http2FloodTest, EmptyDataFlood) {
  nghttp2_hd_deflater* deflater;
  nghttp2_hd_deflate_new(&deflater, 4096);
  std::string attack = Preface() + Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                                         Encode(deflater, Request("POST", "/echo")));
  nghttp2_hd_deflate_del(deflater);
  for (int i = 0; i < 50000; ++i) attack += Frame(NGHTTP2_DATA, 0, 1, "");
  ExpectCalm(attack);
}

TEST_F(Http2FloodTest, HpackBomb) {
  nghttp2_hd_deflater* deflater;
  nghttp2_hd_deflate_new(&deflater, 4096);
  std::string block = Encode(deflater, Request("GET", "/echo"));
  nghttp2_hd_deflate_del(deflater);
  // One literal of ~4 KB added to the dynamic table (index 62), then
  // 12,000 one-byte references to it: ~48 MB decoded from ~16 KB.
  block += '\x40';  // literal with incremental indexing, new name
  block += static_cast<char>(6);
  block += "x-bomb";
  std::string value(4000, 'b');
  block += '\x7f';  // value length 4000: 127 + 3873 as HPACK integer
  uint32_t rest = 4000 - 127;
  while (rest >= 128) {
    block += static_cast<char>((rest % 128) | 0x80);
    rest /= 128;
  }
  block += static_cast<char>(rest);
  block += value;
  block += std::string(12000, static_cast<char>(0x80 | 62));
  std::string attack = Preface();
  // Split at the default maximum frame size (16384).
  size_t first = std::min<size_t>(block.size(), 16384);
  attack += Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, block.substr(0, first));
  for (size_t off = first; off < block.size(); off += 16384) {
    bool last = off + 16384 >= block.size();
    attack += Frame(NGHTTP2_CONTINUATION, last ? NGHTTP2_FLAG_END_HEADERS : 0, 1,
                    block.substr(off, 16384));
  }
  ExpectCalm(attack);
  EXPECT_EQ(opens_.load(), 0);
}

// ---- The nghttp command-line client --------------------------------------

TEST_F(Http2ProxyTest, NghttpClientThroughTheProxy) {
  // Needs nghttp (Debian package nghttp2-client).
  ASSERT_EQ(access("/usr/bin/nghttp", X_OK), 0) << "apt-get install nghttp2-client";
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  std::thread server([&] {
    int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) return;
    PlainStream stream(conn);
    OpenUpstream open = [this]() -> absl::StatusOr<std::unique_ptr<ByteStream>> {
      auto [ours, theirs] = SocketPair();
      upstream_threads_.emplace_back([this, theirs = theirs] {
        FakeUpstream up(theirs, &world_);
        up.Run();
      });
      return std::make_unique<PlainStream>(ours);
    };
    RequestLogSink log = [this](RequestRecord r) {
      std::lock_guard<std::mutex> lock(log_mu_);
      records_.push_back(std::move(r));
    };
    ServeHttp2(stream, kHost, open, guard_, log, Http2Limits{});
  });
  // nghttp speaks h2c with prior knowledge to an http:// URI; the request
  // names the intercepted host and https as a TLS client would.
  test::CommandResult r =
      test::Run({"nghttp", "-t", "10", "-H", ":scheme: https", "-H", ":authority: api.example.com",
                 "-H", absl::StrCat("x-api-key: ", kPlaceholder),
                 absl::StrCat("http://127.0.0.1:", port, "/echo")});
  server.join();
  close(listener);
  for (auto& t : upstream_threads_) t.join();
  upstream_threads_.clear();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      absl::StrContains(r.out, absl::StrCat("x-api-key: ", RedactionMask(strlen(kSecretValue)))))
      << r.out << r.err;
  EXPECT_FALSE(absl::StrContains(r.out, kSecretValue));
  std::lock_guard<std::mutex> lock(world_.mu);
  ASSERT_EQ(world_.requests.size(), 1u);
  EXPECT_EQ(world_.requests[0].headers.at("x-api-key"), kSecretValue);
}

}  // namespace
}  // namespace lazaret::egressd
