// libFuzzer target for the HTTP/2 side of lazaret-egressd (ServeHttp2):
// the input is what the client (the sandbox) sends and what the upstream
// answers, both hostile. Layout: two bytes (big endian) give the length of
// the client's part, the rest is the upstream's; the client's part follows
// a valid connection preface, the upstream's a SETTINGS frame. Properties:
// nothing crashes, leaks or reads out of bounds, the connection ends once
// the input does, and what the proxy writes to the client never carries
// the secret's value: not in a header field (decoded with HPACK) nor in a
// stream's DATA.
#include <nghttp2/nghttp2.h>
#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "services/egressd/guard.h"
#include "services/egressd/http2/http2.h"

namespace egressd = lazaret::egressd;

namespace {

constexpr char kHost[] = "api.example.com";
constexpr char kPlaceholder[] = "lzs-0123456789abcdef0123456789abcdef";
// Lower case, so that it can also be a header name.
constexpr char kValue[] = "sk-fuzz-secret-value";

// Bytes read from a script in chunks of `chunk`; writes are kept (up to a
// bound). No descriptor: HasBuffered keeps the loop from waiting. An
// upstream's script starts once the proxy wrote to it (its requests come
// first); at its end a script says "nothing now" `linger` times before it
// closes, so that answers still in flight are handled.
class ScriptedStream : public egressd::ByteStream {
 public:
  ScriptedStream(std::string in, size_t chunk, std::string* written, bool after_write, int linger)
      : in_(std::move(in)),
        chunk_(chunk),
        written_(written),
        after_write_(after_write),
        linger_(linger) {}
  egressd::IoStatus Read(char* buf, size_t cap, size_t* done) override {
    if (after_write_ && wrote_ == 0) return egressd::IoStatus::kAgain;
    if (off_ == in_.size()) {
      if (linger_-- > 0) return egressd::IoStatus::kAgain;
      return egressd::IoStatus::kClosed;
    }
    size_t n = std::min({cap, chunk_, in_.size() - off_});
    memcpy(buf, in_.data() + off_, n);
    off_ += n;
    *done = n;
    return egressd::IoStatus::kOk;
  }
  egressd::IoStatus Write(const char* data, size_t len, size_t* done) override {
    if (written_ != nullptr && written_->size() < (8u << 20)) written_->append(data, len);
    wrote_ += len;
    *done = len;
    return egressd::IoStatus::kOk;
  }
  void ShutdownWrite() override {}
  int fd() const override { return -1; }
  short WantEvents() const override { return POLLIN; }
  bool HasBuffered() const override { return off_ < in_.size() || linger_ >= 0; }

 private:
  std::string in_;
  size_t off_ = 0;
  size_t chunk_;
  std::string* written_;
  bool after_write_;
  int linger_;
  size_t wrote_ = 0;
};

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

// Decodes the frames the proxy wrote to the client and aborts when the
// secret's value appears in a header field or in a stream's DATA.
void CheckNoSecret(const std::string& out) {
  nghttp2_hd_inflater* inflater;
  if (nghttp2_hd_inflate_new(&inflater) != 0) abort();
  std::map<int32_t, std::string> bodies;
  std::string block;
  size_t off = 0;
  while (out.size() - off >= 9) {
    const uint8_t* h = reinterpret_cast<const uint8_t*>(out.data() + off);
    size_t len = (size_t{h[0]} << 16) | (size_t{h[1]} << 8) | h[2];
    uint8_t type = h[3];
    uint8_t flags = h[4];
    int32_t stream =
        static_cast<int32_t>(((h[5] & 0x7f) << 24) | (h[6] << 16) | (h[7] << 8) | h[8]);
    if (out.size() - off - 9 < len) break;
    std::string payload = out.substr(off + 9, len);
    off += 9 + len;
    if (type == NGHTTP2_DATA || type == NGHTTP2_HEADERS) {
      if (flags & NGHTTP2_FLAG_PADDED) {
        if (payload.empty()) abort();  // the proxy wrote a malformed frame
        size_t pad = static_cast<uint8_t>(payload[0]);
        if (pad + 1 > payload.size()) abort();
        payload = payload.substr(1, payload.size() - 1 - pad);
      }
    }
    if (type == NGHTTP2_DATA) {
      bodies[stream] += payload;
      continue;
    }
    if (type == NGHTTP2_HEADERS) {
      if (flags & NGHTTP2_FLAG_PRIORITY)
        payload = payload.substr(std::min<size_t>(5, payload.size()));
      block = payload;
    } else if (type == NGHTTP2_CONTINUATION) {
      block += payload;
    } else {
      continue;
    }
    if (!(flags & NGHTTP2_FLAG_END_HEADERS)) continue;
    const uint8_t* in = reinterpret_cast<const uint8_t*>(block.data());
    size_t left = block.size();
    while (true) {
      nghttp2_nv nv;
      int inflate_flags = 0;
      ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &inflate_flags, in, left, 1);
      if (n < 0) abort();  // the proxy's own HPACK must decode
      in += n;
      left -= static_cast<size_t>(n);
      if (inflate_flags & NGHTTP2_HD_INFLATE_EMIT) {
        std::string name(reinterpret_cast<const char*>(nv.name), nv.namelen);
        std::string value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
        if (name.find(kValue) != std::string::npos || value.find(kValue) != std::string::npos) {
          abort();
        }
      }
      if (inflate_flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(inflater);
        break;
      }
      if ((inflate_flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) break;
    }
  }
  nghttp2_hd_inflate_del(inflater);
  for (auto& [stream, body] : bodies) {
    if (body.find(kValue) != std::string::npos) abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  size_t client_len = std::min<size_t>((size_t{data[0]} << 8) | data[1], size - 2);
  size_t chunk = 1 + (data[0] & 0x0f) * 997;  // vary how reads split frames
  std::string client_in = std::string(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN) +
                          Frame(NGHTTP2_SETTINGS, 0, 0, "") +
                          std::string(reinterpret_cast<const char*>(data) + 2, client_len);
  std::string upstream_in =
      Frame(NGHTTP2_SETTINGS, 0, 0, "") +
      std::string(reinterpret_cast<const char*>(data) + 2 + client_len, size - 2 - client_len);

  egressd::SecretSpec secret;
  secret.name = "fuzz";
  secret.placeholder = kPlaceholder;
  secret.value = kValue;
  secret.hosts = {kHost};
  secret.inject = egressd::SecretSpec::Inject::kHeader;
  secret.header = "x-api-key";
  lazaret::vocab::HttpRule rule;
  rule.host = kHost;
  rule.allow = {{"GET", "/"}, {"POST", "/v1/"}};
  egressd::RequestGuard guard({secret}, {rule});

  std::string client_out;
  ScriptedStream client(client_in, chunk, &client_out, false, 64);
  int opens = 0;
  egressd::OpenUpstream open = [&]() -> absl::StatusOr<std::unique_ptr<egressd::ByteStream>> {
    // One scripted upstream; a second connection finds it gone.
    if (opens++ > 0) return absl::UnavailableError("no second upstream in the fuzzer");
    return std::make_unique<ScriptedStream>(upstream_in, chunk, nullptr, true, 0);
  };
  size_t records = 0;
  egressd::RequestLogSink log = [&](egressd::RequestRecord r) {
    if (r.protocol != "HTTP/2") abort();
    ++records;
  };
  egressd::Http2Limits limits;
  limits.idle_seconds = 1;
  egressd::ServeHttp2(client, kHost, open, guard, log, limits);
  CheckNoSecret(client_out);
  return 0;
}
