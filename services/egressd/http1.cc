#include "services/egressd/http1.h"

#include <http_parser.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "services/egressd/http1_parse.h"

namespace lazaret::egressd {
namespace {

// Bytes read from either peer at a time: also the most body a single
// parse step buffers.
constexpr size_t kReadChunk = 16 * 1024;
constexpr char kProtocol[] = "HTTP/1.1";
// After the proxy ends a connection, at most this long and this much of
// what the client still sends is read and dropped (a lingering close).
constexpr absl::Duration kLingerTime = absl::Seconds(2);
constexpr size_t kLingerBytes = 256 * 1024;

bool IsHopByHop(absl::string_view name, const std::vector<std::string>& connection_tokens) {
  static constexpr absl::string_view kHop[] = {
      "connection", "keep-alive",          "proxy-connection", "te", "transfer-encoding", "upgrade",
      "trailer",    "proxy-authorization", "content-length"};
  for (absl::string_view h : kHop) {
    if (absl::EqualsIgnoreCase(name, h)) return true;
  }
  for (const std::string& t : connection_tokens) {
    if (absl::EqualsIgnoreCase(name, t)) return true;
  }
  return false;
}

std::vector<std::string> ConnectionTokens(const std::vector<HeaderField>& fields) {
  std::vector<std::string> tokens;
  for (const HeaderField& f : fields) {
    if (!absl::EqualsIgnoreCase(f.name, "connection")) continue;
    for (absl::string_view t : absl::StrSplit(f.value, ',')) {
      t = absl::StripAsciiWhitespace(t);
      if (!t.empty() && tokens.size() < 64) tokens.emplace_back(t);
    }
  }
  return tokens;
}

const char* ReasonPhrase(int status) {
  const char* s = http_status_str(static_cast<http_status>(status));
  return (s == nullptr || absl::string_view(s) == "<unknown>") ? "Status" : s;
}

// A response the proxy makes itself: text/plain, closes the connection.
std::string ProxyResponse(int status, absl::string_view body) {
  std::string b(body);
  if (b.empty() || b.back() != '\n') b.push_back('\n');
  return absl::StrCat("HTTP/1.1 ", status, " ", ReasonPhrase(status),
                      "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ", b.size(),
                      "\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n", b);
}

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// Clears request text that may hold a secret's value when it goes out of
// scope.
struct WipeOnExit {
  std::string* text;
  std::vector<HeaderField>* fields;
  ~WipeOnExit() {
    if (!text->empty()) OPENSSL_cleanse(text->data(), text->size());
    for (HeaderField& f : *fields) {
      if (!f.value.empty()) OPENSSL_cleanse(f.value.data(), f.value.size());
    }
  }
};

// One client connection's state across its requests.
class Http1Session {
 public:
  Http1Session(ByteStream& client, std::string host, bool plaintext,
               const Http1UpstreamOpener& open_upstream, const RequestGuard& guard,
               const RequestLogSink& log, const Http1Limits& limits)
      : client_(client),
        host_(std::move(host)),
        plaintext_(plaintext),
        open_upstream_(open_upstream),
        guard_(guard),
        log_(log),
        limits_(limits) {}

  void Run() {
    while (ServeOne()) {
    }
    if (upstream_ != nullptr) upstream_->ShutdownWrite();
    client_.ShutdownWrite();
    // A lingering close: what the client still sends (the rest of a
    // refused body) is read and dropped for a moment, so that closing with
    // unread bytes (a TCP reset) does not destroy the answer in flight.
    const absl::Time until = absl::Now() + kLingerTime;
    size_t drained = 0;
    char tmp[kReadChunk];
    size_t n = 0;
    while (drained < kLingerBytes &&
           ReadBefore(client_, tmp, sizeof(tmp), &n, until) == IoStatus::kOk) {
      drained += n;
    }
  }

 private:
  absl::Time Idle() const { return absl::Now() + absl::Seconds(limits_.idle_seconds); }

  // Appends what `stream` has (up to kReadChunk) to `buf`.
  IoStatus Fill(ByteStream& stream, std::string* buf, absl::Time deadline) {
    char tmp[kReadChunk];
    size_t n = 0;
    const IoStatus s = ReadBefore(stream, tmp, sizeof(tmp), &n, deadline);
    if (s == IoStatus::kOk) buf->append(tmp, n);
    return s;
  }

  bool SendToClient(absl::string_view data) {
    return WriteAllBefore(client_, data, Idle()) == IoStatus::kOk;
  }

  // Answers the request itself, logs it, ends the connection.
  bool Refuse(RequestRecord* rec, int status, const std::string& why, const std::string& body) {
    SendToClient(ProxyResponse(status, body));
    rec->status = status;
    rec->refused = why;
    Finish(rec);
    return false;
  }

  void Finish(RequestRecord* rec) {
    rec->duration_ms = NowMs() - rec->start_unix_ms;
    if (log_) log_(std::move(*rec));
  }

  // Serves one request; false when the connection ends.
  bool ServeOne() {
    // The head.
    Http1Refusal refusal;
    size_t head_len = 0;
    absl::Time head_deadline = absl::InfiniteFuture();
    absl::Time first_byte;
    while (true) {
      head_len = ScanHttp1Head(in_, limits_.max_head_bytes, limits_.max_fields, &refusal);
      if (head_len > 0 || refusal.status != 0) break;
      if (!in_.empty() && head_deadline == absl::InfiniteFuture()) {
        first_byte = absl::Now();
        head_deadline = first_byte + absl::Seconds(limits_.head_seconds);
      }
      const absl::Time deadline = std::min(head_deadline, Idle());
      const IoStatus s = Fill(client_, &in_, deadline);
      if (s == IoStatus::kOk) continue;
      if (s == IoStatus::kAgain && !in_.empty()) {
        RequestRecord rec = NewRecord();
        return Refuse(&rec, 408, "the request head did not arrive in time",
                      "lazaret egress proxy: the request head did not arrive in time");
      }
      return false;  // closed, idle, or an error between requests
    }
    RequestRecord rec = NewRecord();
    if (refusal.status != 0) {
      return Refuse(&rec, refusal.status, refusal.reason,
                    absl::StrCat("lazaret egress proxy: refused: ", refusal.reason));
    }
    Http1RequestParser parser;
    Http1Request req;
    const std::string head(in_.substr(0, head_len));
    in_.erase(0, head_len);
    const bool ok =
        parser.ParseHead(head, plaintext_ && host_.empty() ? "" : host_, &req, &refusal);
    rec.method = QuoteRequestText(req.method);
    rec.path = QuoteRequestText(req.origin_target.empty() ? req.target : req.origin_target);
    if (!ok) {
      return Refuse(&rec, refusal.status, refusal.reason,
                    absl::StrCat("lazaret egress proxy: refused: ", refusal.reason));
    }
    if (host_.empty()) {
      if (!guard_.Intercepts(req.host)) {
        rec.host = req.host;
        return Refuse(&rec, 403, "host not intercepted",
                      absl::StrCat("lazaret egress proxy: ", req.host,
                                   " has no secret or HTTP rule; the proxy serves only such "
                                   "hosts"));
      }
      host_ = req.host;
    }
    rec.host = host_;

    // The guard.
    GuardDecision decision =
        guard_.Review(host_, req.method, req.origin_target, &req.fields, plaintext_);
    rec.rule = decision.rule;
    if (!decision.allowed) {
      return Refuse(&rec, decision.status == 0 ? 403 : decision.status, decision.rule,
                    decision.body);
    }
    rec.secrets = decision.injected;
    if (req.expect_continue && req.http_minor == 1 &&
        !SendToClient("HTTP/1.1 100 Continue\r\n\r\n")) {
      rec.refused = "the client went away";
      Finish(&rec);
      return false;
    }

    std::string upstream_head = UpstreamHead(req);
    // The injected value lives in these two until the request ends.
    const WipeOnExit wipe{&upstream_head, &req.fields};
    const bool has_body = req.chunked || (req.has_length && req.content_length > 0);
    for (int attempt = 0;; ++attempt) {
      const bool reused = upstream_ != nullptr;
      if (upstream_ == nullptr) {
        absl::StatusOr<std::unique_ptr<ByteStream>> up = open_upstream_(host_);
        if (!up.ok()) {
          return Refuse(&rec, 502, std::string(up.status().message()),
                        absl::StrCat("lazaret egress proxy: could not reach ", host_, ": ",
                                     up.status().message()));
        }
        upstream_ = *std::move(up);
        up_in_.clear();
      }
      if (WriteAllBefore(*upstream_, upstream_head, Idle()) != IoStatus::kOk) {
        upstream_.reset();
        if (reused && attempt == 0) continue;
        return Refuse(&rec, 502, "upstream write failed",
                      absl::StrCat("lazaret egress proxy: the connection to ", host_,
                                   " failed while sending the request"));
      }
      // The body, re-framed, scanned for placeholders.
      if (!parser.done() && !ForwardBody(&parser, req, &rec)) return false;
      // The response.
      const int r = ForwardResponse(req, decision, &rec, reused && attempt == 0 && !has_body);
      if (r == kRetry) {
        upstream_.reset();
        continue;
      }
      Finish(&rec);
      return r == kKeepAlive && req.keep_alive;
    }
  }

  RequestRecord NewRecord() const {
    RequestRecord rec;
    rec.start_unix_ms = NowMs();
    rec.protocol = kProtocol;
    rec.host = host_;
    return rec;
  }

  std::string UpstreamHead(const Http1Request& req) const {
    std::string out = absl::StrCat(req.method, " ", req.origin_target,
                                   " HTTP/1.1\r\nHost: ", req.host_field, "\r\n");
    const std::vector<std::string> tokens = ConnectionTokens(req.fields);
    for (const HeaderField& f : req.fields) {
      if (IsHopByHop(f.name, tokens) || absl::EqualsIgnoreCase(f.name, "host") ||
          absl::EqualsIgnoreCase(f.name, "expect")) {
        continue;
      }
      absl::StrAppend(&out, f.name, ": ", f.value, "\r\n");
    }
    if (req.chunked) {
      out += "Transfer-Encoding: chunked\r\n";
    } else if (req.has_length) {
      absl::StrAppend(&out, "Content-Length: ", req.content_length, "\r\n");
    }
    out += "\r\n";
    return out;
  }

  // Streams the request body to the upstream; false (the connection
  // ends, the record is written) when it was aborted.
  bool ForwardBody(Http1RequestParser* parser, const Http1Request& req, RequestRecord* rec) {
    RequestGuard::BodyScanner scanner = guard_.NewBodyScanner();
    std::string body;
    while (true) {
      if (!in_.empty()) {
        size_t consumed = 0;
        body.clear();
        if (!parser->FeedBody(in_, &body, &consumed)) {
          upstream_.reset();
          return Refuse(rec, 400, "malformed request body framing",
                        "lazaret egress proxy: refused: a malformed request body");
        }
        in_.erase(0, consumed);
        if (!body.empty()) {
          const std::string secret = scanner.Feed(body);
          if (!secret.empty()) {
            upstream_.reset();  // the upstream never gets the rest
            return Refuse(
                rec, 403,
                absl::StrCat("placeholder of secret \"", secret, "\" in the request body"),
                absl::StrCat("lazaret egress proxy: refused: the request body carries "
                             "the placeholder of secret \"",
                             secret,
                             "\"; a placeholder is only replaced in the header its "
                             "secret names, never in a body."));
          }
          rec->request_bytes += body.size();
          std::string framed =
              req.chunked ? absl::StrCat(absl::Hex(body.size()), "\r\n", body, "\r\n") : body;
          if (WriteAllBefore(*upstream_, framed, Idle()) != IoStatus::kOk) {
            upstream_.reset();
            return Refuse(rec, 502, "upstream write failed",
                          absl::StrCat("lazaret egress proxy: the connection to ", host_,
                                       " failed while sending the request body"));
          }
        }
        if (parser->done()) break;
      }
      const IoStatus s = Fill(client_, &in_, Idle());
      if (s != IoStatus::kOk) {
        upstream_.reset();
        rec->refused = "the client ended the connection mid-body";
        Finish(rec);
        return false;
      }
    }
    if (req.chunked && WriteAllBefore(*upstream_, "0\r\n\r\n", Idle()) != IoStatus::kOk) {
      upstream_.reset();
      return Refuse(rec, 502, "upstream write failed",
                    absl::StrCat("lazaret egress proxy: the connection to ", host_,
                                 " failed while sending the request body"));
    }
    return true;
  }

  static constexpr int kKeepAlive = 0;
  static constexpr int kClose = 1;
  static constexpr int kRetry = 2;

  // Reads the response and streams it to the client.
  int ForwardResponse(const Http1Request& req, const GuardDecision& decision, RequestRecord* rec,
                      bool may_retry) {
    const bool head_request = req.method == "HEAD";
    const absl::Time response_deadline = absl::Now() + absl::Seconds(limits_.response_seconds);
    std::unique_ptr<Http1ResponseParser> rp;
    while (true) {  // until a final (non-1xx) response head
      Http1Refusal refusal;
      size_t head_len = 0;
      while (true) {
        head_len = ScanHttp1Head(up_in_, limits_.max_response_head_bytes,
                                 limits_.max_response_fields, &refusal);
        if (head_len > 0 || refusal.status != 0) break;
        const IoStatus s = Fill(*upstream_, &up_in_, response_deadline);
        if (s == IoStatus::kOk) continue;
        if (may_retry && up_in_.empty() && s != IoStatus::kAgain) return kRetry;
        upstream_.reset();
        RefuseUpstream(rec, s == IoStatus::kAgain ? absl::StrCat(host_, " sent no response in time")
                                                  : absl::StrCat(host_,
                                                                 " closed the connection without a "
                                                                 "complete response"));
        return kClose;
      }
      if (refusal.status != 0) {
        upstream_.reset();
        RefuseUpstream(rec,
                       absl::StrCat(host_, " sent a malformed response head: ", refusal.reason));
        return kClose;
      }
      rp = std::make_unique<Http1ResponseParser>(head_request);
      const bool parsed = rp->ParseHead(absl::string_view(up_in_).substr(0, head_len));
      up_in_.erase(0, head_len);
      if (!parsed || rp->status() < 100 || rp->status() > 999) {
        upstream_.reset();
        RefuseUpstream(rec, absl::StrCat(host_, " sent a malformed response head"));
        return kClose;
      }
      if (rp->status() == 101) {
        upstream_.reset();
        RefuseUpstream(rec, absl::StrCat(host_,
                                         " switched protocols, which the proxy does "
                                         "not support"));
        return kClose;
      }
      if (rp->status() >= 200) break;
      // 1xx: dropped (the proxy answered 100 itself).
    }
    const int status = rp->status();
    const bool no_body = head_request || status == 204 || status == 304;
    if (!no_body && !decision.injected.empty()) {
      for (const HeaderField& f : rp->fields()) {
        if (absl::EqualsIgnoreCase(f.name, "content-encoding") &&
            !absl::EqualsIgnoreCase(f.value, "identity")) {
          upstream_.reset();
          RefuseUpstream(
              rec, absl::StrCat(host_, " sent a compressed response (", QuoteRequestText(f.value),
                                ") to a request carrying a secret; "
                                "the proxy cannot redact it"));
          return kClose;
        }
      }
    }
    // Framing towards the client.
    const bool client_11 = req.http_minor == 1;
    const bool length_framed = !no_body && rp->has_length();
    const bool chunk_out = !no_body && !length_framed && client_11;
    bool close_after = !req.keep_alive || (!no_body && !length_framed && !client_11);

    std::string head = absl::StrCat("HTTP/1.1 ", status, " ", ReasonPhrase(status), "\r\n");
    const std::vector<std::string> tokens = ConnectionTokens(rp->fields());
    for (const HeaderField& f : rp->fields()) {
      if (IsHopByHop(f.name, tokens)) continue;
      absl::StrAppend(&head, f.name, ": ", guard_.Redact(f.value, &decision), "\r\n");
    }
    if (length_framed || ((head_request || status == 304) && rp->has_length())) {
      absl::StrAppend(&head, "Content-Length: ", rp->content_length(), "\r\n");
    }
    if (chunk_out) head += "Transfer-Encoding: chunked\r\n";
    if (close_after) head += "Connection: close\r\n";
    head += "\r\n";
    rec->status = status;
    if (!SendToClient(head)) {
      upstream_.reset();
      rec->refused = "the client went away";
      return kClose;
    }

    // The body, streamed.
    RequestGuard::Redactor redactor = guard_.NewRedactor(&decision);
    std::string body;
    auto emit = [&](const std::string& out) {
      if (out.empty()) return true;
      rec->response_bytes += out.size();
      const std::string framed =
          chunk_out ? absl::StrCat(absl::Hex(out.size()), "\r\n", out, "\r\n") : out;
      return SendToClient(framed);
    };
    while (!rp->done()) {
      if (!up_in_.empty()) {
        size_t consumed = 0;
        body.clear();
        const bool ok = rp->Feed(up_in_, &body, &consumed);
        up_in_.erase(0, consumed);
        if (!emit(redactor.Feed(body))) {
          upstream_.reset();
          rec->refused = "the client went away";
          return kClose;
        }
        if (!ok) {
          upstream_.reset();
          rec->refused = absl::StrCat(host_, " sent a malformed response body");
          return kClose;  // the client sees a cut response
        }
        if (rp->done()) break;
      }
      const IoStatus s = Fill(*upstream_, &up_in_, Idle());
      if (s == IoStatus::kOk) continue;
      body.clear();
      const bool complete = s == IoStatus::kClosed && rp->FeedEof(&body);
      if (!emit(redactor.Feed(body))) {
        upstream_.reset();
        rec->refused = "the client went away";
        return kClose;
      }
      upstream_.reset();
      if (!complete) {
        rec->refused =
            absl::StrCat(host_, s == IoStatus::kAgain ? " stalled" : " ended", " mid-response");
        return kClose;
      }
      break;
    }
    if (!emit(redactor.Finish()) || (chunk_out && !SendToClient("0\r\n\r\n"))) {
      upstream_.reset();
      rec->refused = "the client went away";
      return kClose;
    }
    if (upstream_ != nullptr && (!rp->keep_alive() || !up_in_.empty())) upstream_.reset();
    return close_after ? kClose : kKeepAlive;
  }

  void RefuseUpstream(RequestRecord* rec, const std::string& why) {
    SendToClient(ProxyResponse(502, absl::StrCat("lazaret egress proxy: ", why)));
    rec->status = 502;
    rec->refused = why;
  }

  ByteStream& client_;
  std::string host_;
  const bool plaintext_;
  const Http1UpstreamOpener& open_upstream_;
  const RequestGuard& guard_;
  const RequestLogSink& log_;
  const Http1Limits& limits_;
  std::unique_ptr<ByteStream> upstream_;
  std::string in_;     // client bytes not yet parsed
  std::string up_in_;  // upstream bytes not yet parsed
};

}  // namespace

void ServeHttp1(ByteStream& client, const std::string& host, bool plaintext,
                const Http1UpstreamOpener& open_upstream, const RequestGuard& guard,
                const RequestLogSink& log, const Http1Limits& limits) {
  Http1Session(client, host, plaintext, open_upstream, guard, log, limits).Run();
}

}  // namespace lazaret::egressd
