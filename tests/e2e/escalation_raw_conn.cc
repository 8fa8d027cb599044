#include "tests/e2e/escalation_raw_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace lazaret::test::rawesc {
namespace {

std::atomic<int> tickets{0};

int CountTicket(SSL*, SSL_SESSION*) {
  tickets.fetch_add(1);
  return 0;  // not kept: the session is offered by hand (resume mode)
}

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

std::string ProfileFromCert(X509* cert) {
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  std::string profile;
  constexpr char kPrefix[] = "urn:lazaret:session:";
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type != GEN_URI) continue;
    const std::string uri(
        reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.uniformResourceIdentifier)),
        ASN1_STRING_length(n->d.uniformResourceIdentifier));
    if (uri.rfind(kPrefix, 0) != 0) continue;
    const std::string rest = uri.substr(sizeof kPrefix - 1);
    profile = rest.substr(0, rest.find(':'));
  }
  GENERAL_NAMES_free(names);
  return profile;
}

// Finds `"key":` in a flat or nested object and returns the raw value text
// start; npos when absent (protobuf leaves default values out).
size_t ValueAt(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\"";
  size_t at = 0;
  while ((at = json.find(k, at)) != std::string::npos) {
    size_t p = at + k.size();
    while (p < json.size() && json[p] == ' ') ++p;
    if (p < json.size() && json[p] == ':') {
      ++p;
      while (p < json.size() && json[p] == ' ') ++p;
      return p;
    }
    at = p;
  }
  return std::string::npos;
}

bool BoolField(const std::string& json, const std::string& key) {
  const size_t p = ValueAt(json, key);
  return p != std::string::npos && json.compare(p, 4, "true") == 0;
}

int64_t IntField(const std::string& json, const std::string& key) {
  size_t p = ValueAt(json, key);
  if (p == std::string::npos) return 0;
  if (json[p] == '"') ++p;  // int64 may be quoted
  return std::strtoll(json.c_str() + p, nullptr, 10);
}

// The string's text with \" and \\ undone and other escapes kept as written.
std::string StringField(const std::string& json, const std::string& key) {
  size_t p = ValueAt(json, key);
  if (p == std::string::npos || json[p] != '"') return "";
  std::string out;
  for (++p; p < json.size() && json[p] != '"'; ++p) {
    if (json[p] == '\\' && p + 1 < json.size()) {
      const char n = json[++p];
      if (n == '"' || n == '\\' || n == '/') {
        out += n;
      } else {
        out += '\\';
        out += n;
      }
    } else {
      out += json[p];
    }
  }
  return out;
}

}  // namespace

Context* Context::Create(const ClientOptions& options, bool client_cache, std::string* error) {
  std::unique_ptr<Context> c(new Context());
  c->options_ = options;
  c->ctx_ = SSL_CTX_new(TLS_client_method());
  if (c->ctx_ == nullptr) {
    *error = "SSL_CTX_new: " + OpenSslError();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(c->ctx_, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(c->ctx_, TLS1_3_VERSION);
  SSL_CTX_set_verify(c->ctx_, SSL_VERIFY_PEER, nullptr);
  // Resumption is offered on purpose (resume mode): the broker must refuse it.
  SSL_CTX_set_session_cache_mode(c->ctx_,
                                 client_cache ? SSL_SESS_CACHE_CLIENT : SSL_SESS_CACHE_OFF);
  SSL_CTX_sess_set_new_cb(c->ctx_, CountTicket);
  const std::string ca = options.certs + "/ca.pem";
  if (SSL_CTX_load_verify_locations(c->ctx_, ca.c_str(), nullptr) != 1) {
    *error = "cannot load " + ca + ": " + OpenSslError();
    return nullptr;
  }
  const std::string cert = options.certs + "/client.pem";
  const std::string key = options.certs + "/client.key";
  if (Exists(cert) && Exists(key)) {
    if (SSL_CTX_use_certificate_chain_file(c->ctx_, cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(c->ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
      *error = "cannot load the client certificate: " + OpenSslError();
      return nullptr;
    }
    c->profile_ = ProfileFromCert(SSL_CTX_get0_certificate(c->ctx_));
  }
  if (!options.profile.empty()) c->profile_ = options.profile;
  return c.release();
}

Context::~Context() { SSL_CTX_free(ctx_); }

int Context::TicketsSeen() { return tickets.load(); }

Conn::~Conn() {
  if (ssl_ != nullptr) {
    SSL_shutdown(ssl_);
    SSL_free(ssl_);
  }
  if (fd_ >= 0) close(fd_);
}

void Conn::SetEnd(int ret, const char* during) {
  const int e = SSL_get_error(ssl_, ret);
  if (e == SSL_ERROR_ZERO_RETURN) {
    end_ = "eof";
  } else if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    end_ = "timeout";  // SO_RCVTIMEO / SO_SNDTIMEO ran out
  } else if (e == SSL_ERROR_SYSCALL) {
    const unsigned long q = ERR_peek_error();
    if (q != 0) {
      end_ = std::string(during) + OpenSslError();
    } else {
      end_ = (errno == ECONNRESET || errno == EPIPE)     ? "reset"
             : (errno == EAGAIN || errno == EWOULDBLOCK) ? "timeout"
                                                         : "eof";
    }
  } else {
    end_ = std::string(during) + OpenSslError();
  }
}

bool Conn::Open(SSL_SESSION* session) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  const std::string& endpoint = ctx_.options().endpoint;
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos ||
      inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    end_ = "connect-failed: bad endpoint " + endpoint;
    return false;
  }
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(endpoint.c_str() + colon + 1)));
  if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    end_ = std::string("connect-failed: ") + strerrorname_np(errno);
    return false;
  }
  const timeval tv{ctx_.options().io_timeout_s, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ssl_ = SSL_new(ctx_.ctx());
  SSL_set_fd(ssl_, fd_);
  if (session != nullptr) SSL_set_session(ssl_, session);
  const int r = SSL_connect(ssl_);
  if (r != 1) {
    SetEnd(r, "handshake-failed: ");
    if (end_ == "eof" || end_ == "reset") end_ = "handshake-failed: " + end_;
    return false;
  }
  return true;
}

bool Conn::WriteFrame(const std::string& payload, int64_t len_override) {
  const uint32_t len = len_override >= 0 ? static_cast<uint32_t>(len_override)
                                         : static_cast<uint32_t>(payload.size());
  std::string frame = {static_cast<char>(len >> 24), static_cast<char>(len >> 16),
                       static_cast<char>(len >> 8), static_cast<char>(len)};
  frame += payload;
  size_t off = 0;
  while (off < frame.size()) {
    const int w = SSL_write(ssl_, frame.data() + off, static_cast<int>(frame.size() - off));
    if (w <= 0) {
      SetEnd(w, "tls-error: ");
      return false;
    }
    off += static_cast<size_t>(w);
  }
  return true;
}

bool Conn::ReadFull(char* buf, size_t len, size_t* got) {
  *got = 0;
  while (*got < len) {
    const int r = SSL_read(ssl_, buf + *got, static_cast<int>(len - *got));
    if (r <= 0) {
      SetEnd(r, "tls-error: ");
      return false;
    }
    *got += static_cast<size_t>(r);
  }
  return true;
}

bool Conn::ReadFrame(std::string* payload) {
  unsigned char h[4];
  size_t got = 0;
  if (!ReadFull(reinterpret_cast<char*>(h), 4, &got)) {
    if (got > 0) end_ = "truncated-header " + end_;
    return false;
  }
  const uint32_t len =
      (uint32_t{h[0]} << 24) | (uint32_t{h[1]} << 16) | (uint32_t{h[2]} << 8) | h[3];
  if (len > (4u << 20)) {
    end_ = "oversized-frame " + std::to_string(len);
    return false;
  }
  payload->assign(len, '\0');
  if (!ReadFull(payload->data(), len, &got)) {
    end_ = "truncated-frame " + end_;
    return false;
  }
  return true;
}

Frame ParseFrame(const std::string& json) {
  Frame f;
  f.pending = ValueAt(json, "pending") != std::string::npos;
  f.result = ValueAt(json, "result") != std::string::npos;
  f.request_id = StringField(json, "request_id");
  f.approved = BoolField(json, "approved");
  f.protocol_error = BoolField(json, "protocol_error");
  f.timed_out = BoolField(json, "timed_out");
  f.stdout_truncated = BoolField(json, "stdout_truncated");
  f.exit_code = IntField(json, "exit_code");
  f.reason = StringField(json, "reason");
  f.stdout_b64 = StringField(json, "stdout");
  return f;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string RequestJson(const std::string& id, const std::string& profile,
                        const std::vector<std::string>& argv) {
  std::string out =
      "{\"request_id\":" + JsonString(id) + ",\"profile\":" + JsonString(profile) + ",\"argv\":[";
  for (size_t i = 0; i < argv.size(); ++i) out += (i ? "," : "") + JsonString(argv[i]);
  return out + "],\"justification\":\"escalation_raw_client\"}";
}

std::string NewRequestId(const std::string& prefix) {
  unsigned char r[8] = {};
  if (getrandom(r, sizeof r, 0) != sizeof r) std::abort();
  std::string out = prefix;
  char buf[3];
  for (unsigned char c : r) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

double NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

}  // namespace lazaret::test::rawesc
