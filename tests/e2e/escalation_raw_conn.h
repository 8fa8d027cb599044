// The connection layer of the raw escalation test client
// (escalation_raw_client.cc): TLS 1.3 to the session's escalation relay
// (TCP on the loopback the sandbox shares with its sidecar) with OpenSSL
// directly, frames written and read by hand (4-byte big-endian
// length + payload), and a small reader of the broker's JSON answers. Runs
// inside the sandbox (static, unprivileged); the broker's frames are read
// as untrusted text and only ever printed or counted.
#ifndef LAZARET_TESTS_E2E_ESCALATION_RAW_CONN_H_
#define LAZARET_TESTS_E2E_ESCALATION_RAW_CONN_H_

#include <openssl/ssl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lazaret::test::rawesc {

struct ClientOptions {
  std::string endpoint = "127.0.0.1:7457";  // services/wire/relay_endpoint.h
  std::string certs = "/run/lazaret/certs";
  std::string profile;    // empty: read from client.pem's SAN URI
  int io_timeout_s = 60;  // per read or write; then the connection ends "timeout"
};

// One TLS context for every connection of a run: TLS 1.3 only, the broker
// verified against ca.pem, client.pem/client.key presented when present.
// Tickets the broker sends are counted (it must send none).
class Context {
 public:
  // nullptr and `error` set when the certificates cannot be loaded.
  static Context* Create(const ClientOptions& options, bool client_cache, std::string* error);
  ~Context();
  SSL_CTX* ctx() const { return ctx_; }
  const ClientOptions& options() const { return options_; }
  // The profile named by client.pem (urn:lazaret:session:<profile>:<id>).
  const std::string& profile() const { return profile_; }
  static int TicketsSeen();

 private:
  Context() = default;
  SSL_CTX* ctx_ = nullptr;
  ClientOptions options_;
  std::string profile_;
};

// How a connection ended, as printed: "eof", "reset", "timeout", "handshake-failed:
// <reason>", "tls-error: <reason>", "connect-failed: <errno name>".
class Conn {
 public:
  explicit Conn(const Context& ctx) : ctx_(ctx) {}
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  // Connects and completes the handshake (offering `session` for
  // resumption when given). False with end() set on failure.
  bool Open(SSL_SESSION* session = nullptr);
  // Writes one frame: the length (or `len_override` when >= 0) then the
  // payload.
  bool WriteFrame(const std::string& payload, int64_t len_override = -1);
  // Reads one frame's payload; false at the end (end() says how).
  bool ReadFrame(std::string* payload);
  SSL* ssl() const { return ssl_; }
  const std::string& end() const { return end_; }

 private:
  bool ReadFull(char* buf, size_t len, size_t* got);
  void SetEnd(int ret, const char* during);
  const Context& ctx_;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string end_;
};

// What the tests need from one ServerFrame's JSON (preserve_proto_field_names).
struct Frame {
  bool pending = false;
  bool result = false;
  std::string request_id;
  bool approved = false;
  bool protocol_error = false;
  bool timed_out = false;
  bool stdout_truncated = false;
  int64_t exit_code = 0;
  std::string reason;
  std::string stdout_b64;
};
Frame ParseFrame(const std::string& json);

// JSON text of a string (quotes included; control bytes as \u00XX, the
// rest byte for byte).
std::string JsonString(const std::string& s);
// An EscalateRequest's JSON with an argv.
std::string RequestJson(const std::string& id, const std::string& profile,
                        const std::vector<std::string>& argv);
// A fresh request id: prefix plus 16 random hex digits.
std::string NewRequestId(const std::string& prefix);
double NowMs();

}  // namespace lazaret::test::rawesc

#endif  // LAZARET_TESTS_E2E_ESCALATION_RAW_CONN_H_
