#include "services/egressd/http2/http2.h"

#include <nghttp2/nghttp2.h>
#include <openssl/crypto.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace lazaret::egressd {
namespace {

using Clock = std::chrono::steady_clock;

// One read from either side; a turn reads at most kReadsPerTurn of them
// before writing, so neither side starves the other.
constexpr size_t kReadChunk = 16 * 1024;
constexpr int kReadsPerTurn = 4;
// Serialised frames waiting for a side's socket. Frames are produced only
// below this mark, so a side that does not read stops its own responses
// (and through the windows, their upstream) instead of growing a buffer.
constexpr size_t kOutHighWater = 64 * 1024;
// The stream-level receive window granted to each side; the connection
// window (Http2Limits::max_buffered_bytes) bounds the sum.
constexpr int32_t kStreamWindow = 256 * 1024;
// CONTINUATION frames one header block may take (its bytes are bounded
// too): empty CONTINUATION frames cost nothing in bytes.
constexpr int kMaxContinuations = 32;
// Upstream connections alive at once: the current one and those draining
// after a GOAWAY.
constexpr size_t kMaxUpstreams = 4;
// How long a connection the proxy ends may take to flush its GOAWAY.
constexpr auto kCloseGrace = std::chrono::seconds(5);
// The per-field overhead of RFC 9113 6.5.2 header list size.
constexpr size_t kFieldOverhead = 32;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::string_view View(const uint8_t* data, size_t len) {
  return absl::string_view(reinterpret_cast<const char*>(data), len);
}

nghttp2_nv Nv(absl::string_view name, absl::string_view value) {
  nghttp2_nv nv;
  nv.name = reinterpret_cast<uint8_t*>(const_cast<char*>(name.data()));
  nv.namelen = name.size();
  nv.value = reinterpret_cast<uint8_t*>(const_cast<char*>(value.data()));
  nv.valuelen = value.size();
  nv.flags = NGHTTP2_NV_FLAG_NONE;
  return nv;
}

// The host part of an :authority or Host value ("host", "host:port",
// "[v6]:port"), lower case; empty when it is malformed (userinfo, a
// non-numeric port, a byte that is no part of a host name).
std::string AuthorityHost(absl::string_view authority) {
  if (authority.empty() || authority.size() > 255) return {};
  absl::string_view host = authority;
  absl::string_view port;
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == absl::string_view::npos) return {};
    host = authority.substr(1, close - 1);
    absl::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return {};
      port = rest.substr(1);
    }
    for (char c : host) {
      if (!absl::ascii_isxdigit(c) && c != ':' && c != '.') return {};
    }
  } else {
    size_t colon = authority.rfind(':');
    if (colon != absl::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    for (char c : host) {
      if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_') return {};
    }
  }
  if (host.empty() || port.size() > 5) return {};
  for (char c : port) {
    if (!absl::ascii_isdigit(c)) return {};
  }
  return absl::AsciiStrToLower(host);
}

// A count of one kind of frame in the current one-second window.
class Budget {
 public:
  explicit Budget(uint32_t per_second) : per_second_(per_second) {}
  // False once the window's count passes the budget.
  bool Spend(Clock::time_point now) {
    if (now - window_start_ >= std::chrono::seconds(1)) {
      window_start_ = now;
      count_ = 0;
    }
    return ++count_ <= per_second_;
  }

 private:
  uint32_t per_second_;
  Clock::time_point window_start_{};
  uint32_t count_ = 0;
};

// The frames of one peer that cost work without moving a request: counted
// as each frame begins, before its payload is read.
class FloodMeter {
 public:
  explicit FloodMeter(const Http2Limits& limits)
      : max_block_(limits.max_header_list_bytes),
        streams_(limits.max_new_streams_per_second),
        resets_(limits.max_resets_per_second),
        control_(limits.max_control_frames_per_second),
        empty_data_(limits.max_empty_data_frames_per_second) {}

  // Empty when the frame is within budget, else what it exceeded.
  std::string Check(const nghttp2_frame_hd& hd, bool new_stream) {
    Clock::time_point now = Clock::now();
    switch (hd.type) {
      case NGHTTP2_HEADERS:
        block_bytes_ = hd.length;
        continuations_ = 0;
        if (block_bytes_ > max_block_) return "a header block beyond the limit";
        if (new_stream && !streams_.Spend(now)) return "too many new streams per second";
        return {};
      case NGHTTP2_CONTINUATION:
        block_bytes_ += hd.length;
        if (block_bytes_ > max_block_ || ++continuations_ > kMaxContinuations) {
          return "a header block beyond the limit";
        }
        return {};
      case NGHTTP2_RST_STREAM:
        return resets_.Spend(now) ? "" : "too many stream resets per second";
      case NGHTTP2_SETTINGS:
      case NGHTTP2_PING:
        if (hd.flags & NGHTTP2_FLAG_ACK) return {};
        return control_.Spend(now) ? "" : "too many control frames per second";
      case NGHTTP2_PRIORITY:
        return control_.Spend(now) ? "" : "too many control frames per second";
      case NGHTTP2_DATA:
        if (hd.length != 0 || (hd.flags & NGHTTP2_FLAG_END_STREAM)) return {};
        return empty_data_.Spend(now) ? "" : "too many empty DATA frames per second";
      default:
        return {};
    }
  }

 private:
  size_t max_block_;
  size_t block_bytes_ = 0;
  int continuations_ = 0;
  Budget streams_;
  Budget resets_;
  Budget control_;
  Budget empty_data_;
};

// Bytes serialised by a session and not yet taken by its stream.
struct OutBuffer {
  std::string data;
  size_t off = 0;
  size_t size() const { return data.size() - off; }
};

// One side's stream and the readiness its last kAgain waits for.
struct Side {
  ByteStream* stream = nullptr;
  OutBuffer out;
  short read_want = POLLIN;
  short write_want = POLLOUT;
};

class Connection;

// One upstream HTTP/2 connection: the proxy is its client.
struct Upstream {
  Upstream(Connection* c, std::unique_ptr<ByteStream> s, const Http2Limits& limits)
      : conn(c), owned(std::move(s)), meter(limits) {
    side.stream = owned.get();
  }
  ~Upstream() {
    if (session != nullptr) nghttp2_session_del(session);
  }

  Connection* conn;
  std::unique_ptr<ByteStream> owned;
  Side side;
  nghttp2_session* session = nullptr;
  FloodMeter meter;
  // GOAWAY received or sent: no new streams.
  bool draining = false;
  // I/O or protocol failure: dropped at the end of the turn.
  bool broken = false;
  // Open upstream stream id -> client stream id.
  std::map<int32_t, int32_t> client_of;
};

// One client stream and, once forwarded, its upstream stream.
struct Exchange {
  enum class Phase {
    kHeaders,    // the request's header block is arriving
    kQueued,     // header block complete, decided after this read
    kLocal,      // the proxy answers itself (refusal, 421, 502)
    kForwarded,  // the upstream stream carries it
    kAborted,    // reset by the proxy
  };

  Exchange(int32_t stream_id, const RequestGuard& guard)
      : id(stream_id), scanner(guard.NewBodyScanner()) {}

  int32_t id;
  Phase phase = Phase::kHeaders;
  Clock::time_point start = Clock::now();
  RequestRecord record;

  // The request as received.
  std::string method, scheme, authority, path, protocol;
  std::vector<HeaderField> headers;
  std::vector<HeaderField> trailers;
  bool in_trailers = false;
  bool duplicate_pseudo = false;
  size_t header_bytes = 0;
  bool request_end = false;  // END_STREAM from the client

  // Request body received and not yet taken by the upstream session (each
  // byte taken is acknowledged to the client then).
  RequestGuard::BodyScanner scanner;
  std::string req_buf;
  size_t req_off = 0;
  bool req_deferred = false;

  // The upstream stream; `upstream` stays set after that stream closed (its
  // connection window still gets the bytes consumed) until the upstream is
  // dropped.
  Upstream* upstream = nullptr;
  int32_t upstream_id = -1;
  bool upstream_open = false;

  // What the guard decided; its derived values (basic credentials) are
  // redacted from the response too, and cleared with it.
  GuardDecision decision;

  // The response: headers as the upstream sent them, then body bytes
  // redacted and not yet taken by the client session.
  std::string status;
  std::vector<HeaderField> resp_headers;
  size_t resp_header_bytes = 0;
  bool resp_too_large = false;
  bool resp_compressed = false;                    // refused when a secret went out
  bool response_started = false;                   // final HEADERS submitted to the client
  std::optional<RequestGuard::Redactor> redactor;  // set when forwarded
  std::string resp_buf;
  size_t resp_off = 0;
  size_t resp_unconsumed = 0;  // upstream bytes not yet acknowledged
  bool resp_end = false;
  bool resp_deferred = false;
  std::vector<HeaderField> resp_trailers;
  bool in_resp_trailers = false;

  // A response of the proxy's own.
  std::string local_body;
  size_t local_off = 0;
};

class Connection {
 public:
  Connection(ByteStream& client, const std::string& host, const OpenUpstream& open_upstream,
             const RequestGuard& guard, const RequestLogSink& log, const Http2Limits& limits)
      : host_(absl::AsciiStrToLower(host)),
        open_upstream_(open_upstream),
        guard_(guard),
        log_(log),
        limits_(limits),
        meter_(limits) {
    client_.stream = &client;
  }

  ~Connection() {
    for (auto& [id, ex] : exchanges_) {
      if (ex->phase == Exchange::Phase::kHeaders) continue;
      if (ex->record.refused.empty() && !(ex->resp_end && ex->resp_off == ex->resp_buf.size())) {
        ex->record.refused = calm_reason_.empty()
                                 ? "the connection ended before the response did"
                                 : absl::StrCat("the connection was ended: ", calm_reason_);
      }
      Finish(*ex);
    }
    exchanges_.clear();
    for (auto& up : upstreams_) up->side.stream->ShutdownWrite();
    upstreams_.clear();
    if (session_ != nullptr) nghttp2_session_del(session_);
  }

  void Serve();

 private:
  // Session set-up.
  bool StartClientSession();
  absl::StatusOr<Upstream*> CurrentUpstream();

  // The turn's steps.
  bool ReadClient();
  void ReadUpstream(Upstream& up);
  bool FlushSession(nghttp2_session* session, Side& side);
  void Dispatch();
  void DropBrokenUpstreams();
  void Calm(const std::string& why);

  // Request handling.
  void Decide(Exchange& ex);
  void Forward(Exchange& ex, std::vector<HeaderField> headers);
  void Respond(Exchange& ex, int status, std::string body, const std::string& refused);
  void Abort(Exchange& ex, const std::string& why);
  void UpstreamStreamFailed(Exchange& ex, const std::string& why);
  void ReleaseRequestBytes(Exchange& ex);
  void ConsumeUpstream(Exchange& ex, size_t taken);
  void Finish(Exchange& ex);
  Exchange* Find(int32_t id);
  Exchange* FindUpstream(Upstream& up, int32_t upstream_id);

  // Client session callbacks.
  static int OnClientBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user);
  static int OnClientBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnClientHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                            size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                            void* user);
  static int OnClientFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnClientDataChunk(nghttp2_session*, uint8_t flags, int32_t stream_id,
                               const uint8_t* data, size_t len, void* user);
  static int OnClientFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnClientStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code,
                                 void* user);
  static ssize_t ReadResponseBody(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                                  uint32_t* flags, nghttp2_data_source*, void* user);

  // Upstream session callbacks (user data: the Upstream).
  static int OnUpstreamBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user);
  static int OnUpstreamBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnUpstreamHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                              size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                              void* user);
  static int OnUpstreamFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnUpstreamDataChunk(nghttp2_session*, uint8_t flags, int32_t stream_id,
                                 const uint8_t* data, size_t len, void* user);
  static int OnUpstreamStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code,
                                   void* user);
  static ssize_t ReadRequestBody(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                                 uint32_t* flags, nghttp2_data_source*, void* user);

  void SubmitResponseHeaders(Exchange& ex, bool end_stream);
  void ResponseEnded(Exchange& ex);

  const std::string host_;
  const OpenUpstream& open_upstream_;
  const RequestGuard& guard_;
  const RequestLogSink& log_;
  const Http2Limits limits_;

  Side client_;
  nghttp2_session* session_ = nullptr;
  FloodMeter meter_;
  std::map<int32_t, std::unique_ptr<Exchange>> exchanges_;
  std::vector<int32_t> pending_;  // header blocks completed during this read
  std::vector<std::unique_ptr<Upstream>> upstreams_;

  Clock::time_point last_io_ = Clock::now();
  // Set once the proxy ends the connection (GOAWAY queued): no more reads,
  // and the loop ends when the GOAWAY is out or at close_deadline_.
  bool closing_ = false;
  Clock::time_point close_deadline_{};
  std::string calm_reason_;
};

Exchange* Connection::Find(int32_t id) {
  auto it = exchanges_.find(id);
  return it == exchanges_.end() ? nullptr : it->second.get();
}

Exchange* Connection::FindUpstream(Upstream& up, int32_t upstream_id) {
  auto it = up.client_of.find(upstream_id);
  return it == up.client_of.end() ? nullptr : Find(it->second);
}

bool Connection::StartClientSession() {
  nghttp2_session_callbacks* cb;
  if (nghttp2_session_callbacks_new(&cb) != 0) return false;
  nghttp2_session_callbacks_set_on_begin_frame_callback(cb, OnClientBeginFrame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, OnClientBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cb, OnClientHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, OnClientFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnClientDataChunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, OnClientFrameSend);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnClientStreamClose);
  nghttp2_option* opt;
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    return false;
  }
  nghttp2_option_set_no_auto_window_update(opt, 1);
  // Streams the client keeps after closing them (for priorities) would be
  // memory it controls.
  nghttp2_option_set_no_closed_streams(opt, 1);
  nghttp2_option_set_max_outbound_ack(opt, 100);
  nghttp2_option_set_max_settings(opt, 16);
  int rv = nghttp2_session_server_new2(&session_, cb, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rv != 0) return false;

  nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits_.max_header_list_bytes},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
  };
  if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings,
                              sizeof(settings) / sizeof(settings[0])) != 0) {
    return false;
  }
  int32_t window =
      static_cast<int32_t>(std::min<uint32_t>(limits_.max_buffered_bytes, NGHTTP2_MAX_WINDOW_SIZE));
  return nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, window) == 0;
}

absl::StatusOr<Upstream*> Connection::CurrentUpstream() {
  for (auto& up : upstreams_) {
    if (!up->draining && !up->broken) return up.get();
  }
  if (upstreams_.size() >= kMaxUpstreams) {
    return absl::UnavailableError("too many upstream connections are still draining");
  }
  absl::StatusOr<std::unique_ptr<ByteStream>> stream = open_upstream_();
  if (!stream.ok()) return stream.status();
  auto up = std::make_unique<Upstream>(this, std::move(*stream), limits_);

  nghttp2_session_callbacks* cb;
  if (nghttp2_session_callbacks_new(&cb) != 0) return absl::ResourceExhaustedError("nghttp2");
  nghttp2_session_callbacks_set_on_begin_frame_callback(cb, OnUpstreamBeginFrame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, OnUpstreamBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cb, OnUpstreamHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, OnUpstreamFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnUpstreamDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnUpstreamStreamClose);
  nghttp2_option* opt;
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    return absl::ResourceExhaustedError("nghttp2");
  }
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_no_closed_streams(opt, 1);
  nghttp2_option_set_max_outbound_ack(opt, 100);
  nghttp2_option_set_max_settings(opt, 16);
  int rv = nghttp2_session_client_new2(&up->session, cb, up.get(), opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rv != 0) return absl::ResourceExhaustedError("nghttp2");

  nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits_.max_header_list_bytes},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
  };
  int32_t window =
      static_cast<int32_t>(std::min<uint32_t>(limits_.max_buffered_bytes, NGHTTP2_MAX_WINDOW_SIZE));
  if (nghttp2_submit_settings(up->session, NGHTTP2_FLAG_NONE, settings,
                              sizeof(settings) / sizeof(settings[0])) != 0 ||
      nghttp2_session_set_local_window_size(up->session, NGHTTP2_FLAG_NONE, 0, window) != 0) {
    return absl::InternalError("nghttp2 settings");
  }
  upstreams_.push_back(std::move(up));
  return upstreams_.back().get();
}

// ---- Client session callbacks --------------------------------------------

int Connection::OnClientBeginFrame(nghttp2_session* session, const nghttp2_frame_hd* hd,
                                   void* user) {
  auto* self = static_cast<Connection*>(user);
  bool new_stream =
      hd->type == NGHTTP2_HEADERS && nghttp2_session_find_stream(session, hd->stream_id) == nullptr;
  std::string why = self->meter_.Check(*hd, new_stream);
  if (!why.empty()) {
    self->calm_reason_ = why;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int Connection::OnClientBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<Connection*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  int32_t id = frame->hd.stream_id;
  if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    auto ex = std::make_unique<Exchange>(id, self->guard_);
    ex->record.start_unix_ms = NowUnixMs();
    ex->record.protocol = "HTTP/2";
    ex->record.host = self->host_;
    self->exchanges_[id] = std::move(ex);
  } else if (Exchange* ex = self->Find(id)) {
    ex->in_trailers = true;
  }
  return 0;
}

int Connection::OnClientHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                               size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                               void* user) {
  auto* self = static_cast<Connection*>(user);
  Exchange* ex = self->Find(frame->hd.stream_id);
  if (ex == nullptr) return 0;
  // Counted over the request's header block and its trailers: a decoded
  // list far beyond its compressed size is an HPACK bomb.
  ex->header_bytes += namelen + valuelen + kFieldOverhead;
  if (ex->header_bytes > self->limits_.max_header_list_bytes) {
    self->calm_reason_ = "a header list beyond the limit";
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  absl::string_view n = View(name, namelen);
  absl::string_view v = View(value, valuelen);
  if (ex->in_trailers) {
    ex->trailers.push_back({std::string(n), std::string(v)});
    return 0;
  }
  if (!n.empty() && n.front() == ':') {
    std::string* slot = n == ":method"      ? &ex->method
                        : n == ":scheme"    ? &ex->scheme
                        : n == ":authority" ? &ex->authority
                        : n == ":path"      ? &ex->path
                        : n == ":protocol"  ? &ex->protocol
                                            : nullptr;
    if (slot == nullptr || !slot->empty()) {
      ex->duplicate_pseudo = true;
    } else {
      *slot = std::string(v);
    }
    return 0;
  }
  ex->headers.push_back({std::string(n), std::string(v)});
  return 0;
}

int Connection::OnClientFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<Connection*>(user);
  Exchange* ex = self->Find(frame->hd.stream_id);
  if (ex == nullptr) return 0;
  bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS) {
    if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      ex->phase = Exchange::Phase::kQueued;
      self->pending_.push_back(ex->id);
    } else if (ex->phase == Exchange::Phase::kQueued || ex->phase == Exchange::Phase::kForwarded) {
      // Trailers: checked for placeholders as a body is.
      for (const HeaderField& f : ex->trailers) {
        RequestGuard::BodyScanner scan = self->guard_.NewBodyScanner();
        std::string secret = scan.Feed(absl::StrCat(f.name, ": ", f.value));
        if (!secret.empty()) {
          self->Abort(*ex, absl::StrCat("a placeholder of secret \"", secret,
                                        "\" in the request trailers"));
          return 0;
        }
      }
    }
  } else if (frame->hd.type != NGHTTP2_DATA) {
    return 0;
  }
  if (end_stream) {
    ex->request_end = true;
    if (ex->phase == Exchange::Phase::kForwarded && ex->req_deferred && ex->upstream_open) {
      ex->req_deferred = false;
      nghttp2_session_resume_data(ex->upstream->session, ex->upstream_id);
    }
  }
  return 0;
}

int Connection::OnClientDataChunk(nghttp2_session* session, uint8_t, int32_t stream_id,
                                  const uint8_t* data, size_t len, void* user) {
  auto* self = static_cast<Connection*>(user);
  Exchange* ex = self->Find(stream_id);
  bool keep = ex != nullptr && (ex->phase == Exchange::Phase::kQueued ||
                                (ex->phase == Exchange::Phase::kForwarded && ex->upstream_open));
  if (keep) {
    std::string secret = ex->scanner.Feed(View(data, len));
    if (!secret.empty()) {
      self->Abort(*ex,
                  absl::StrCat("a placeholder of secret \"", secret, "\" in the request body"));
      keep = false;
    }
  }
  if (!keep) {
    // Not going anywhere: acknowledged at once so the window stays open.
    nghttp2_session_consume(session, stream_id, len);
    return 0;
  }
  ex->req_buf.append(reinterpret_cast<const char*>(data), len);
  if (ex->phase == Exchange::Phase::kForwarded && ex->req_deferred && ex->upstream_open) {
    ex->req_deferred = false;
    nghttp2_session_resume_data(ex->upstream->session, ex->upstream_id);
  }
  return 0;
}

int Connection::OnClientFrameSend(nghttp2_session* session, const nghttp2_frame* frame,
                                  void* user) {
  auto* self = static_cast<Connection*>(user);
  if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
  if (frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS) return 0;
  Exchange* ex = self->Find(frame->hd.stream_id);
  // The response is complete while the client still sends a body nobody
  // reads (the proxy answered itself, or the upstream is done): end the
  // stream (RFC 9113 8.1).
  if (ex != nullptr && !ex->request_end &&
      (ex->phase == Exchange::Phase::kLocal || !ex->upstream_open)) {
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, ex->id, NGHTTP2_NO_ERROR);
  }
  return 0;
}

int Connection::OnClientStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* user) {
  auto* self = static_cast<Connection*>(user);
  auto it = self->exchanges_.find(stream_id);
  if (it == self->exchanges_.end()) return 0;
  std::unique_ptr<Exchange> ex = std::move(it->second);
  self->exchanges_.erase(it);
  if (ex->phase != Exchange::Phase::kHeaders) {
    if (ex->phase == Exchange::Phase::kQueued && ex->record.refused.empty()) {
      ex->record.refused = "reset by the client before it was decided";
    }
    self->Finish(*ex);
  }
  if (ex->upstream != nullptr) {
    if (ex->upstream_open) {
      nghttp2_submit_rst_stream(ex->upstream->session, NGHTTP2_FLAG_NONE, ex->upstream_id,
                                NGHTTP2_CANCEL);
      ex->upstream->client_of.erase(ex->upstream_id);
    }
    if (ex->resp_unconsumed > 0) {
      nghttp2_session_consume_connection(ex->upstream->session, ex->resp_unconsumed);
    }
  }
  size_t unread = ex->req_buf.size() - ex->req_off;
  if (unread > 0) nghttp2_session_consume_connection(self->session_, unread);
  return 0;
}

ssize_t Connection::ReadResponseBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                                     size_t length, uint32_t* flags, nghttp2_data_source*,
                                     void* user) {
  auto* self = static_cast<Connection*>(user);
  Exchange* ex = self->Find(stream_id);
  if (ex == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (ex->phase == Exchange::Phase::kLocal) {
    size_t n = std::min(length, ex->local_body.size() - ex->local_off);
    memcpy(buf, ex->local_body.data() + ex->local_off, n);
    ex->local_off += n;
    if (ex->local_off == ex->local_body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
  size_t n = std::min(length, ex->resp_buf.size() - ex->resp_off);
  memcpy(buf, ex->resp_buf.data() + ex->resp_off, n);
  ex->resp_off += n;
  ex->record.response_bytes += n;
  bool drained = ex->resp_off == ex->resp_buf.size();
  if (drained) {
    ex->resp_buf.clear();
    ex->resp_off = 0;
  } else if (ex->resp_off >= 64 * 1024) {
    ex->resp_buf.erase(0, ex->resp_off);
    ex->resp_off = 0;
  }
  self->ConsumeUpstream(*ex, n);
  if (drained && ex->resp_end) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!ex->resp_trailers.empty()) {
      std::vector<std::string> values;
      values.reserve(ex->resp_trailers.size());
      std::vector<nghttp2_nv> nva;
      for (const HeaderField& f : ex->resp_trailers) {
        values.push_back(self->guard_.Redact(f.value, &ex->decision));
      }
      for (size_t i = 0; i < ex->resp_trailers.size(); ++i) {
        nva.push_back(Nv(ex->resp_trailers[i].name, values[i]));
      }
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      nghttp2_submit_trailer(session, stream_id, nva.data(), nva.size());
    }
    return static_cast<ssize_t>(n);
  }
  if (n == 0) {
    ex->resp_deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  return static_cast<ssize_t>(n);
}

// ---- Upstream session callbacks ------------------------------------------

int Connection::OnUpstreamBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
  auto* up = static_cast<Upstream*>(user);
  if (!up->meter.Check(*hd, false).empty()) return NGHTTP2_ERR_CALLBACK_FAILURE;
  return 0;
}

int Connection::OnUpstreamBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* up = static_cast<Upstream*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Exchange* ex = up->conn->FindUpstream(*up, frame->hd.stream_id);
  if (ex == nullptr) return 0;
  if (frame->headers.cat == NGHTTP2_HCAT_HEADERS && ex->response_started) {
    ex->in_resp_trailers = true;
  } else {
    ex->status.clear();
    ex->resp_headers.clear();
  }
  return 0;
}

int Connection::OnUpstreamHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                                 size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                                 void* user) {
  auto* up = static_cast<Upstream*>(user);
  Exchange* ex = up->conn->FindUpstream(*up, frame->hd.stream_id);
  if (ex == nullptr) return 0;
  ex->resp_header_bytes += namelen + valuelen + kFieldOverhead;
  if (ex->resp_header_bytes > up->conn->limits_.max_header_list_bytes) {
    ex->resp_too_large = true;
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // resets the upstream stream
  }
  absl::string_view n = View(name, namelen);
  absl::string_view v = View(value, valuelen);
  if (n == ":status") {
    ex->status = std::string(v);
    return 0;
  }
  if (!n.empty() && n.front() == ':') return 0;
  // A field named after a secret's value cannot be masked (the mask is no
  // token): it is dropped.
  if (up->conn->guard_.Redact(n, &ex->decision) != n) return 0;
  // A compressed body would hide a secret's value from the redactor.
  if (n == "content-encoding" && !ex->decision.injected.empty() &&
      !absl::EqualsIgnoreCase(v, "identity")) {
    ex->resp_compressed = true;
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // resets the upstream stream
  }
  (ex->in_resp_trailers ? ex->resp_trailers : ex->resp_headers)
      .push_back({std::string(n), std::string(v)});
  return 0;
}

void Connection::SubmitResponseHeaders(Exchange& ex, bool end_stream) {
  std::vector<std::string> values;
  values.reserve(ex.resp_headers.size());
  for (const HeaderField& f : ex.resp_headers) {
    values.push_back(guard_.Redact(f.value, &ex.decision));
  }
  std::vector<nghttp2_nv> nva;
  nva.push_back(Nv(":status", ex.status));
  for (size_t i = 0; i < ex.resp_headers.size(); ++i) {
    nva.push_back(Nv(ex.resp_headers[i].name, values[i]));
  }
  int status = 0;
  for (char c : ex.status) status = status * 10 + (c - '0');
  if (status < 200) {
    // Informational (103, 100): passed on, the final response follows.
    if (status != 101) {
      nghttp2_submit_headers(session_, NGHTTP2_FLAG_NONE, ex.id, nullptr, nva.data(), nva.size(),
                             nullptr);
    }
    ex.status.clear();
    ex.resp_headers.clear();
    ex.resp_header_bytes = 0;
    return;
  }
  ex.record.status = status;
  ex.response_started = true;
  ex.resp_header_bytes = 0;
  nghttp2_data_provider provider;
  provider.source.ptr = nullptr;
  provider.read_callback = ReadResponseBody;
  nghttp2_submit_response(session_, ex.id, nva.data(), nva.size(),
                          end_stream ? nullptr : &provider);
}

void Connection::ResponseEnded(Exchange& ex) {
  if (ex.resp_end) return;
  ex.resp_buf.append(ex.redactor->Finish());
  ex.resp_end = true;
  if (ex.resp_deferred) {
    ex.resp_deferred = false;
    nghttp2_session_resume_data(session_, ex.id);
  }
}

int Connection::OnUpstreamFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* up = static_cast<Upstream*>(user);
  Connection* self = up->conn;
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    up->draining = true;
    return 0;
  }
  Exchange* ex = self->FindUpstream(*up, frame->hd.stream_id);
  if (ex == nullptr) return 0;
  bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS) {
    if (ex->in_resp_trailers) {
      self->ResponseEnded(*ex);
      return 0;
    }
    if (ex->status.empty()) return 0;
    self->SubmitResponseHeaders(*ex, end_stream);
    if (end_stream && ex->response_started) ex->resp_end = true;
    return 0;
  }
  if (frame->hd.type == NGHTTP2_DATA && end_stream) self->ResponseEnded(*ex);
  return 0;
}

int Connection::OnUpstreamDataChunk(nghttp2_session* session, uint8_t, int32_t stream_id,
                                    const uint8_t* data, size_t len, void* user) {
  auto* up = static_cast<Upstream*>(user);
  Connection* self = up->conn;
  Exchange* ex = self->FindUpstream(*up, stream_id);
  if (ex == nullptr || ex->phase != Exchange::Phase::kForwarded || !ex->response_started ||
      ex->resp_end) {
    nghttp2_session_consume(session, stream_id, len);
    return 0;
  }
  ex->resp_buf.append(ex->redactor->Feed(View(data, len)));
  ex->resp_unconsumed += len;
  if (ex->resp_buf.size() == ex->resp_off) {
    // All held back by the redactor (at most a secret's length).
    self->ConsumeUpstream(*ex, 0);
  }
  if (ex->resp_deferred && ex->resp_buf.size() > ex->resp_off) {
    ex->resp_deferred = false;
    nghttp2_session_resume_data(self->session_, ex->id);
  }
  return 0;
}

int Connection::OnUpstreamStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code,
                                      void* user) {
  auto* up = static_cast<Upstream*>(user);
  Connection* self = up->conn;
  Exchange* ex = self->FindUpstream(*up, stream_id);
  up->client_of.erase(stream_id);
  if (ex == nullptr) return 0;
  ex->upstream_open = false;
  if (ex->resp_end && error_code == NGHTTP2_NO_ERROR) return 0;
  if (ex->resp_end) return 0;  // complete; a late reset of the request side
  std::string why;
  if (ex->resp_too_large) {
    why = "the upstream's response headers are beyond the limit";
  } else if (ex->resp_compressed) {
    why = "the upstream compressed a response to a request that carried a secret";
  } else if (error_code == NGHTTP2_REFUSED_STREAM) {
    why = "the upstream refused the stream (GOAWAY or REFUSED_STREAM)";
  } else {
    why = absl::StrCat("the upstream reset the stream (HTTP/2 error ", error_code, ")");
  }
  self->UpstreamStreamFailed(*ex, why);
  return 0;
}

ssize_t Connection::ReadRequestBody(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                                    size_t length, uint32_t* flags, nghttp2_data_source*,
                                    void* user) {
  auto* up = static_cast<Upstream*>(user);
  Connection* self = up->conn;
  Exchange* ex = self->FindUpstream(*up, stream_id);
  if (ex == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  size_t n = std::min(length, ex->req_buf.size() - ex->req_off);
  memcpy(buf, ex->req_buf.data() + ex->req_off, n);
  ex->req_off += n;
  ex->record.request_bytes += n;
  if (ex->req_off == ex->req_buf.size()) {
    ex->req_buf.clear();
    ex->req_off = 0;
  } else if (ex->req_off >= 64 * 1024) {
    ex->req_buf.erase(0, ex->req_off);
    ex->req_off = 0;
  }
  // Taken by the upstream session: the client may send as much again.
  if (n > 0) nghttp2_session_consume(self->session_, ex->id, n);
  if (ex->req_buf.empty() && ex->request_end) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!ex->trailers.empty()) {
      std::vector<nghttp2_nv> nva;
      for (const HeaderField& f : ex->trailers) nva.push_back(Nv(f.name, f.value));
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      nghttp2_submit_trailer(session, stream_id, nva.data(), nva.size());
    }
    return static_cast<ssize_t>(n);
  }
  if (n == 0) {
    ex->req_deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  return static_cast<ssize_t>(n);
}

// ---- Request handling ----------------------------------------------------

void Connection::ConsumeUpstream(Exchange& ex, size_t taken) {
  if (ex.upstream == nullptr || ex.resp_unconsumed == 0) return;
  // Bytes given to the client free as many upstream bytes; once nothing is
  // waiting, the rest (what the redactor shortened or holds) is freed too.
  size_t n =
      ex.resp_buf.size() == ex.resp_off ? ex.resp_unconsumed : std::min(taken, ex.resp_unconsumed);
  if (n == 0) return;
  ex.resp_unconsumed -= n;
  nghttp2_session_consume(ex.upstream->session, ex.upstream_id, n);
}

void Connection::ReleaseRequestBytes(Exchange& ex) {
  size_t unread = ex.req_buf.size() - ex.req_off;
  if (unread > 0) nghttp2_session_consume(session_, ex.id, unread);
  ex.req_buf.clear();
  ex.req_off = 0;
}

void Connection::Respond(Exchange& ex, int status, std::string body, const std::string& refused) {
  ReleaseRequestBytes(ex);
  ex.phase = Exchange::Phase::kLocal;
  ex.record.status = status;
  if (!refused.empty()) ex.record.refused = refused;
  ex.local_body = ex.method == "HEAD" ? std::string() : std::move(body);
  ex.local_off = 0;
  std::string code = std::to_string(status);
  std::string length = std::to_string(ex.local_body.size());
  nghttp2_nv nva[] = {
      Nv(":status", code),
      Nv("content-type", "text/plain; charset=utf-8"),
      Nv("content-length", length),
  };
  nghttp2_data_provider provider;
  provider.source.ptr = nullptr;
  provider.read_callback = ReadResponseBody;
  nghttp2_submit_response(session_, ex.id, nva, 3, ex.local_body.empty() ? nullptr : &provider);
}

void Connection::Abort(Exchange& ex, const std::string& why) {
  ReleaseRequestBytes(ex);
  ex.phase = Exchange::Phase::kAborted;
  ex.record.refused = why;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, ex.id, NGHTTP2_CANCEL);
  if (ex.upstream != nullptr && ex.upstream_open) {
    nghttp2_submit_rst_stream(ex.upstream->session, NGHTTP2_FLAG_NONE, ex.upstream_id,
                              NGHTTP2_CANCEL);
    ex.upstream->client_of.erase(ex.upstream_id);
    ex.upstream_open = false;
  }
}

void Connection::UpstreamStreamFailed(Exchange& ex, const std::string& why) {
  ex.upstream_open = false;
  if (ex.phase != Exchange::Phase::kForwarded) return;
  if (!ex.response_started) {
    Respond(ex, 502,
            absl::StrCat("lazaret egress proxy: the upstream ", host_,
                         " did not answer this request: ", why, "\n"),
            why);
    return;
  }
  ex.phase = Exchange::Phase::kAborted;
  ex.record.refused = why;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, ex.id, NGHTTP2_INTERNAL_ERROR);
}

void Connection::Decide(Exchange& ex) {
  ex.record.method = ex.method;
  ex.record.path = ex.path;
  if (ex.duplicate_pseudo) {
    Respond(ex, 400, "lazaret egress proxy: malformed request pseudo-headers\n",
            "malformed pseudo-headers");
    return;
  }
  if (ex.method == "CONNECT" || !ex.protocol.empty()) {
    Respond(ex, 405,
            "lazaret egress proxy: CONNECT (and extended CONNECT) is not served on an "
            "intercepted host\n",
            "CONNECT on an intercepted host");
    return;
  }
  if (ex.scheme != "https" || ex.path.empty() || ex.method.empty()) {
    Respond(ex, 400, "lazaret egress proxy: a request needs :method, :scheme https and :path\n",
            "malformed pseudo-headers");
    return;
  }
  // The host the connection was made for is the one the guard decides
  // for; a request naming another (in :authority or Host) would be routed
  // by the upstream to a host nobody decided about.
  bool has_authority = !ex.authority.empty();
  if (has_authority && AuthorityHost(ex.authority) != host_) {
    Respond(ex, 421,
            absl::StrCat("lazaret egress proxy: this connection is for ", host_,
                         "; its requests must name that host in :authority\n"),
            ":authority names another host");
    return;
  }
  bool has_host = false;
  std::vector<HeaderField> headers;
  headers.reserve(ex.headers.size());
  for (HeaderField& f : ex.headers) {
    if (f.name == "host") {
      if (AuthorityHost(f.value) != host_) {
        Respond(ex, 421,
                absl::StrCat("lazaret egress proxy: this connection is for ", host_,
                             "; its requests must name that host in Host\n"),
                "Host names another host");
        return;
      }
      has_host = true;
      continue;  // :authority is rebuilt for the upstream
    }
    headers.push_back(std::move(f));
  }
  ex.headers.clear();
  if (!has_authority && !has_host) {
    Respond(ex, 400, "lazaret egress proxy: a request needs :authority\n", "no :authority");
    return;
  }
  GuardDecision decision = guard_.Review(host_, ex.method, ex.path, &headers);
  ex.record.rule = decision.rule;
  if (!decision.allowed) {
    Respond(ex, decision.status != 0 ? decision.status : 403, decision.body,
            decision.rule.empty() ? "refused by the request guard" : decision.rule);
    return;
  }
  ex.record.secrets = decision.injected;
  ex.decision = std::move(decision);
  ex.redactor.emplace(guard_.NewRedactor(&ex.decision));
  Forward(ex, std::move(headers));
}

void Connection::Forward(Exchange& ex, std::vector<HeaderField> headers) {
  // The rewritten headers carry secret values: cleared once nghttp2 has
  // its copy (or the request failed).
  struct Wiper {
    std::vector<HeaderField>* fields;
    ~Wiper() {
      for (HeaderField& f : *fields) OPENSSL_cleanse(f.value.data(), f.value.size());
    }
  } wiper{&headers};
  std::vector<nghttp2_nv> nva;
  nva.reserve(headers.size() + 4);
  nva.push_back(Nv(":method", ex.method));
  nva.push_back(Nv(":scheme", "https"));
  nva.push_back(Nv(":authority", host_));
  nva.push_back(Nv(":path", ex.path));
  for (const HeaderField& f : headers) nva.push_back(Nv(f.name, f.value));
  nghttp2_data_provider provider;
  provider.source.ptr = nullptr;
  provider.read_callback = ReadRequestBody;
  bool has_body = !(ex.request_end && ex.req_buf.size() == ex.req_off && ex.trailers.empty());

  std::string why;
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<Upstream*> up = CurrentUpstream();
    if (!up.ok()) {
      why = std::string(up.status().message());
      break;
    }
    int32_t id = nghttp2_submit_request((*up)->session, nullptr, nva.data(), nva.size(),
                                        has_body ? &provider : nullptr, nullptr);
    if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) {
      (*up)->draining = true;
      why = "the upstream connection ran out of stream ids";
      continue;
    }
    if (id < 0) {
      why = nghttp2_strerror(id);
      break;
    }
    ex.phase = Exchange::Phase::kForwarded;
    ex.upstream = *up;
    ex.upstream_id = id;
    ex.upstream_open = true;
    (*up)->client_of[id] = ex.id;
    return;
  }
  Respond(ex, 502,
          absl::StrCat("lazaret egress proxy: the upstream ", host_, " could not be reached: ", why,
                       "\n"),
          absl::StrCat("upstream unavailable: ", why));
}

void Connection::Finish(Exchange& ex) {
  ex.record.duration_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - ex.start).count();
  if (ex.record.method.empty()) {
    ex.record.method = ex.method;
    ex.record.path = ex.path;
  }
  if (log_) log_(std::move(ex.record));
}

void Connection::Dispatch() {
  std::vector<int32_t> pending;
  pending.swap(pending_);
  for (int32_t id : pending) {
    Exchange* ex = Find(id);
    // Reset in the same read (rapid reset): nothing was done for it.
    if (ex == nullptr || ex->phase != Exchange::Phase::kQueued) continue;
    Decide(*ex);
  }
}

// ---- The loop ------------------------------------------------------------

void Connection::Calm(const std::string& why) {
  if (closing_) return;
  calm_reason_ = why;
  closing_ = true;
  close_deadline_ = Clock::now() + kCloseGrace;
  nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
}

// Reads what the client sent; false when the connection is to end now.
bool Connection::ReadClient() {
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerTurn && !closing_; ++i) {
    size_t done = 0;
    IoStatus st = client_.stream->Read(buf, sizeof(buf), &done);
    if (st == IoStatus::kAgain) {
      client_.read_want = client_.stream->WantEvents();
      return true;
    }
    if (st != IoStatus::kOk) return false;
    last_io_ = Clock::now();
    ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(buf), done);
    if (rv < 0) {
      // nghttp2 answers ordinary protocol errors itself (GOAWAY queued, no
      // error returned); what it returns is a flood it detected (too many
      // queued ACKs, CONTINUATION frames), a budget of ours, or not HTTP/2.
      if (rv == NGHTTP2_ERR_BAD_CLIENT_MAGIC) return false;
      Calm(rv == NGHTTP2_ERR_CALLBACK_FAILURE && !calm_reason_.empty()
               ? calm_reason_
               : absl::StrCat("nghttp2: ", nghttp2_strerror(static_cast<int>(rv))));
      return true;
    }
  }
  return true;
}

void Connection::ReadUpstream(Upstream& up) {
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerTurn && !up.broken; ++i) {
    size_t done = 0;
    IoStatus st = up.side.stream->Read(buf, sizeof(buf), &done);
    if (st == IoStatus::kAgain) {
      up.side.read_want = up.side.stream->WantEvents();
      return;
    }
    if (st != IoStatus::kOk) {
      up.broken = true;
      return;
    }
    last_io_ = Clock::now();
    ssize_t rv = nghttp2_session_mem_recv(up.session, reinterpret_cast<uint8_t*>(buf), done);
    if (rv < 0) up.broken = true;
  }
}

// Serialises frames up to the high-water mark and writes what the stream
// takes; false on a write error or a session error.
bool Connection::FlushSession(nghttp2_session* session, Side& side) {
  for (int round = 0; round < 8; ++round) {
    while (side.out.size() < kOutHighWater) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session, &data);
      if (n < 0) return false;
      if (n == 0) break;
      side.out.data.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (side.out.size() == 0) return true;
    while (side.out.size() > 0) {
      size_t done = 0;
      IoStatus st = side.stream->Write(side.out.data.data() + side.out.off, side.out.size(), &done);
      if (st == IoStatus::kAgain) {
        side.write_want = side.stream->WantEvents();
        return true;
      }
      if (st != IoStatus::kOk) return false;
      last_io_ = Clock::now();
      side.out.off += done;
    }
    side.out.data.clear();
    side.out.off = 0;
  }
  return true;
}

void Connection::DropBrokenUpstreams() {
  for (auto it = upstreams_.begin(); it != upstreams_.end();) {
    Upstream& up = **it;
    bool idle_done =
        up.draining && up.client_of.empty() && nghttp2_session_want_write(up.session) == 0;
    bool finished =
        nghttp2_session_want_read(up.session) == 0 && nghttp2_session_want_write(up.session) == 0;
    if (!up.broken && !idle_done && !finished) {
      ++it;
      continue;
    }
    std::map<int32_t, int32_t> open;
    open.swap(up.client_of);
    for (auto& [upstream_id, client_id] : open) {
      if (Exchange* ex = Find(client_id)) {
        UpstreamStreamFailed(*ex, "the upstream connection failed");
      }
    }
    for (auto& [id, ex] : exchanges_) {
      if (ex->upstream == &up) {
        ex->upstream = nullptr;
        ex->upstream_open = false;
      }
    }
    up.side.stream->ShutdownWrite();
    it = upstreams_.erase(it);
  }
}

void Connection::Serve() {
  if (!StartClientSession()) return;
  const auto idle = std::chrono::seconds(std::max(1, limits_.idle_seconds));
  while (true) {
    if (!closing_ && !ReadClient()) return;
    if (!closing_) Dispatch();
    for (auto& up : upstreams_) {
      if (!up->broken) ReadUpstream(*up);
    }
    for (auto& up : upstreams_) {
      if (!up->broken && !FlushSession(up->session, up->side)) up->broken = true;
    }
    DropBrokenUpstreams();
    if (!FlushSession(session_, client_)) return;

    Clock::time_point now = Clock::now();
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0 &&
        client_.out.size() == 0) {
      return;
    }
    if (closing_ && (now >= close_deadline_ ||
                     (client_.out.size() == 0 && nghttp2_session_want_write(session_) == 0))) {
      return;
    }
    if (now - last_io_ >= idle) {
      if (!closing_) {
        closing_ = true;
        close_deadline_ = now + std::chrono::seconds(1);
        nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
        continue;
      }
      return;
    }

    // Wait for either side, unless one holds decrypted bytes already.
    std::vector<pollfd> fds;
    bool buffered = false;
    short client_events = 0;
    if (!closing_) client_events |= client_.read_want;
    if (client_.out.size() > 0) client_events |= client_.write_want;
    fds.push_back({client_.stream->fd(), client_events, 0});
    if (!closing_ && client_.stream->HasBuffered()) buffered = true;
    for (auto& up : upstreams_) {
      short events = up->side.read_want;
      if (up->side.out.size() > 0) events |= up->side.write_want;
      fds.push_back({up->side.stream->fd(), events, 0});
      if (up->side.stream->HasBuffered()) buffered = true;
    }
    auto deadline = last_io_ + idle;
    if (closing_) deadline = std::min(deadline, close_deadline_);
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    int timeout = buffered ? 0 : static_cast<int>(std::clamp<int64_t>(wait + 1, 0, 1000));
    if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return;
    // Each readiness is retried by the next turn; kAgain re-arms it.
    client_.read_want = POLLIN;
    client_.write_want = POLLOUT;
    for (auto& up : upstreams_) {
      up->side.read_want = POLLIN;
      up->side.write_want = POLLOUT;
    }
  }
}

}  // namespace

void ServeHttp2(ByteStream& client, const std::string& host, const OpenUpstream& open_upstream,
                const RequestGuard& guard, const RequestLogSink& log, const Http2Limits& limits) {
  Connection connection(client, host, open_upstream, guard, log, limits);
  connection.Serve();
  client.ShutdownWrite();
}

}  // namespace lazaret::egressd
