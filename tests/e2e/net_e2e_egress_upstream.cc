#include "tests/e2e/net_e2e_egress_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
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
#include "clients/lazaret/json/json_writer.h"
#include "tests/e2e/net_e2e_support.h"

namespace lazaret::test::e2e::net {
namespace {

namespace json = ::lazaret::cli::json;

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

// HTTP/2 when the client offers it, else HTTP/1.1; with no ALPN in common
// the handshake goes on without one (HTTP/1.1).
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  static const unsigned char kProtocols[] = {2,   'h', '2', 8,   'h', 't',
                                             't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kProtocols, sizeof(kProtocols), in, inlen) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

// The number of events "/sse?n=N" asks for (1 to 100), else the default.
int SseEvents(const std::string& target, int default_events) {
  if (const size_t q = target.find("?n="); q != std::string::npos) {
    int n = 0;
    if (absl::SimpleAtoi(target.substr(q + 3), &n) && n >= 1 && n <= 100) return n;
  }
  return default_events;
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
    const unsigned char* alpn = nullptr;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    if (alpn_len == 2 && std::memcmp(alpn, "h2", 2) == 0) {
      ServeHttp2(ssl, sni);
    } else {
      std::string pending;
      while (ServeOne(ssl, sni, &pending)) {
      }
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
  r.protocol = "HTTP/1.1";
  Record(&r);
  const bool close = absl::EqualsIgnoreCase(Header(r, "connection"), "close");
  Answer(ssl, r, close);
  return !close;
}

void FakeUpstream::Record(UpstreamRequest* r) {
  r->key_ok = !credentials_.api_key.empty() && Header(*r, "x-api-key") == credentials_.api_key;
  const std::string auth = Header(*r, "authorization");
  r->bearer_ok = !credentials_.bearer.empty() && auth == "Bearer " + credentials_.bearer;
  if (absl::StartsWith(auth, "Basic ") && !credentials_.basic_password.empty()) {
    const std::string decoded = Base64Decode(auth.substr(6));
    const size_t colon = decoded.find(':');
    r->basic_ok =
        colon != std::string::npos && decoded.substr(colon + 1) == credentials_.basic_password;
  }
  std::lock_guard<std::mutex> l(mu_);
  requests_.push_back(*r);
}

// The Messages API as the vendor's SDK expects it: an authentication error
// without the right x-api-key; else one message whose text is "key ok",
// whole or (a body with "stream":true) as the server-sent events of a
// streamed message. The model is the test's, not read from the request.
FakeUpstream::Reply FakeUpstream::MessagesReply(const UpstreamRequest& r) const {
  Reply reply;
  reply.headers = {{"content-type", "application/json"}, {"request-id", "req_lzt_e2e"}};
  if (!r.key_ok) {
    reply.status = 401;
    reply.body =
        "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\","
        "\"message\":\"invalid x-api-key\"}}\n";
    return reply;
  }
  constexpr char kMessage[] =
      "\"id\":\"msg_lzt_e2e\",\"type\":\"message\",\"role\":\"assistant\","
      "\"model\":\"claude-lzt-e2e\"";
  std::string body = r.body;
  body.erase(std::remove_if(body.begin(), body.end(), absl::ascii_isspace), body.end());
  if (!absl::StrContains(body, "\"stream\":true")) {
    reply.body =
        absl::StrCat("{", kMessage, ",\"content\":[{\"type\":\"text\",\"text\":\"", kMessagesText,
                     "\"}],\"stop_reason\":\"end_turn\",\"stop_sequence\":null,"
                     "\"usage\":{\"input_tokens\":5,\"output_tokens\":2}}\n");
    return reply;
  }
  reply.headers = {{"content-type", "text/event-stream"},
                   {"cache-control", "no-cache"},
                   {"request-id", "req_lzt_e2e"}};
  auto event = [&](const char* type, const std::string& data) {
    absl::StrAppend(&reply.body, "event: ", type, "\ndata: {\"type\":\"", type, "\"", data,
                    "}\n\n");
  };
  event("message_start", absl::StrCat(",\"message\":{", kMessage,
                                      ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
                                      "\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}"));
  event("content_block_start", ",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}");
  // The text in two deltas, as a real stream splits it.
  const std::string text = kMessagesText;
  const size_t half = text.size() / 2;
  for (const std::string& part : {text.substr(0, half), text.substr(half)}) {
    event("content_block_delta",
          absl::StrCat(",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"", part, "\"}"));
  }
  event("content_block_stop", ",\"index\":0");
  event("message_delta",
        ",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},"
        "\"usage\":{\"output_tokens\":2}");
  event("message_stop", "");
  return reply;
}

FakeUpstream::Reply FakeUpstream::MakeReply(const UpstreamRequest& r) const {
  Reply reply;
  if (r.method == "POST" && r.target == "/v1/messages" && !Header(r, "anthropic-version").empty()) {
    return MessagesReply(r);
  }
  if (absl::StartsWith(r.target, "/sse")) {
    reply.headers = {{"content-type", "text/event-stream"}, {"cache-control", "no-cache"}};
    for (int i = 1; i <= SseEvents(r.target, kSseEvents); ++i) {
      absl::StrAppend(&reply.body, "data: event ", i, "\n\n");
    }
  } else if (absl::StartsWith(r.target, "/echo-key")) {
    // An upstream that echoes the credential back, in its body and in a
    // header: the proxy must not let it reach the sandbox.
    reply.headers = {{"content-type", "application/json"}, {"x-echo-key", credentials_.api_key}};
    reply.body = json::Object().String("echo", credentials_.api_key).Text() + "\n";
  } else {
    reply.headers = {{"content-type", "application/json"}};
    reply.body = json::Object()
                     .String("protocol", r.protocol)
                     .String("method", r.method)
                     .String("path", r.target)
                     .String("host", Header(r, "host"))
                     .String("x_api_key", Header(r, "x-api-key"))
                     .String("authorization", Header(r, "authorization"))
                     .Bool("key_ok", r.key_ok)
                     .Bool("bearer_ok", r.bearer_ok)
                     .Bool("basic_ok", r.basic_ok)
                     .Text() +
                 "\n";
  }
  return reply;
}

void FakeUpstream::Answer(SSL* ssl, const UpstreamRequest& r, bool close) {
  const std::string connection = close ? "Connection: close\r\n" : "";
  if (absl::StartsWith(r.target, "/sse")) {
    // Over HTTP/1.1 the events are streamed: one chunk each, kSseGapMs
    // apart.
    if (!WriteAll(ssl, absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                    "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n",
                                    connection, "\r\n"))) {
      return;
    }
    std::vector<int64_t> sent;
    const int events = SseEvents(r.target, kSseEvents);
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
  const Reply reply = MakeReply(r);
  std::string head = absl::StrCat("HTTP/1.1 ", reply.status,
                                  reply.status == 200 ? " OK" : " Unauthorized", "\r\n");
  for (const auto& [name, value] : reply.headers) absl::StrAppend(&head, name, ": ", value, "\r\n");
  WriteAll(ssl, absl::StrCat(head, "Content-Length: ", reply.body.size(), "\r\n", connection,
                             "\r\n", reply.body));
}

// HTTP/2 (nghttp2): each stream's request is recorded when it ends and
// answered whole (the server-sent events too, at once). The connection's
// bytes go through blocking SSL reads and writes on this thread.
namespace {

struct H2Stream {
  UpstreamRequest request;
  std::string response_body;
  size_t sent = 0;
  bool too_big = false;
};

struct H2Connection {
  FakeUpstream* server = nullptr;
  std::string sni;
  std::map<int32_t, H2Stream> streams;
};

ssize_t ReadResponseBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                         uint32_t* data_flags, nghttp2_data_source* source, void*) {
  auto* stream = static_cast<H2Stream*>(source->ptr);
  const size_t n = std::min(length, stream->response_body.size() - stream->sent);
  std::memcpy(buf, stream->response_body.data() + stream->sent, n);
  stream->sent += n;
  if (stream->sent == stream->response_body.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

}  // namespace

int FakeUpstream::OnH2Header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                             size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                             void* user_data) {
  auto* c = static_cast<H2Connection*>(user_data);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto it = c->streams.find(frame->hd.stream_id);
  if (it == c->streams.end()) return 0;
  UpstreamRequest& r = it->second.request;
  const std::string n(reinterpret_cast<const char*>(name), namelen);
  const std::string v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":method") {
    r.method = v;
  } else if (n == ":path") {
    r.target = v;
  } else if (n == ":authority") {
    r.headers["host"] = v;
  } else if (!n.empty() && n[0] != ':' && r.headers.size() < 256) {
    r.headers[n] = v;
  }
  return 0;
}

int FakeUpstream::OnH2FrameRecv(nghttp2_session* session, const nghttp2_frame* frame,
                                void* user_data) {
  auto* c = static_cast<H2Connection*>(user_data);
  if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
    return 0;
  }
  auto it = c->streams.find(frame->hd.stream_id);
  if (it == c->streams.end()) return 0;
  H2Stream& stream = it->second;
  if (stream.too_big) {
    return nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                     NGHTTP2_REFUSED_STREAM);
  }
  stream.request.protocol = "HTTP/2";
  c->server->Record(&stream.request);
  const Reply reply = c->server->MakeReply(stream.request);
  stream.response_body = reply.body;
  std::vector<std::string> storage = {":status", std::to_string(reply.status), "content-length",
                                      std::to_string(reply.body.size())};
  for (const auto& [name, value] : reply.headers) {
    storage.push_back(name);
    storage.push_back(value);
  }
  std::vector<nghttp2_nv> nva;
  for (size_t i = 0; i + 1 < storage.size(); i += 2) {
    nva.push_back({reinterpret_cast<uint8_t*>(storage[i].data()),
                   reinterpret_cast<uint8_t*>(storage[i + 1].data()), storage[i].size(),
                   storage[i + 1].size(), NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider provider;
  provider.source.ptr = &stream;
  provider.read_callback = ReadResponseBody;
  return nghttp2_submit_response(session, frame->hd.stream_id, nva.data(), nva.size(), &provider);
}

void FakeUpstream::ServeHttp2(SSL* ssl, const std::string& sni) {
  H2Connection c;
  c.server = this;
  c.sni = sni;
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(
      callbacks, [](nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
        auto* conn = static_cast<H2Connection*>(user_data);
        if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
          H2Stream& stream = conn->streams[frame->hd.stream_id];
          stream.request.sni = conn->sni;
          stream.request.realtime_ns = RealtimeNs();
        }
        return 0;
      });
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &FakeUpstream::OnH2Header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &FakeUpstream::OnH2FrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
      callbacks, [](nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                    void* user_data) {
        auto* conn = static_cast<H2Connection*>(user_data);
        auto it = conn->streams.find(stream_id);
        if (it == conn->streams.end()) return 0;
        if (it->second.request.body.size() + len > kMaxBody) {
          it->second.too_big = true;
        } else {
          it->second.request.body.append(reinterpret_cast<const char*>(data), len);
        }
        return 0;
      });
  nghttp2_session_callbacks_set_on_stream_close_callback(
      callbacks, [](nghttp2_session*, int32_t stream_id, uint32_t, void* user_data) {
        static_cast<H2Connection*>(user_data)->streams.erase(stream_id);
        return 0;
      });
  nghttp2_session* session = nullptr;
  nghttp2_session_server_new(&session, callbacks, &c);
  nghttp2_session_callbacks_del(callbacks);
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, 1);
  for (;;) {
    while (nghttp2_session_want_write(session) != 0) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session, &data);
      if (n <= 0) break;
      if (!WriteAll(ssl,
                    std::string(reinterpret_cast<const char*>(data), static_cast<size_t>(n)))) {
        nghttp2_session_del(session);
        return;
      }
    }
    if (nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0) break;
    char buf[16384];
    const int n = SSL_read(ssl, buf, sizeof(buf));
    if (n <= 0) break;
    if (nghttp2_session_mem_recv(session, reinterpret_cast<const uint8_t*>(buf),
                                 static_cast<size_t>(n)) < 0) {
      break;
    }
  }
  nghttp2_session_del(session);
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
    // What Content-Length frames (the client may print more after it).
    size_t length = 0;
    auto cl = out.headers.find("content-length");
    if (cl != out.headers.end() && absl::SimpleAtoi(cl->second, &length) && length < rest.size()) {
      rest.resize(length);
    }
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

}  // namespace lazaret::test::e2e::net
