// lazaret-escalate's TLS 1.3 connection to lazaret-brokerd (inside the
// sandbox, unprivileged, static). It trusts only the session's ca.pem: the
// broker must present a certificate that chains to it and carries the SAN
// URI urn:lazaret:broker before one payload byte is sent. What the broker
// then sends is still checked by the wire parser.
#ifndef LAZARET_ESCALATE_CLIENT_TLS_STREAM_H_
#define LAZARET_ESCALATE_CLIENT_TLS_STREAM_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "services/wire/byte_stream.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace lazaret::escalation::client {

inline constexpr char kBrokerSanUri[] = "urn:lazaret:broker";
inline constexpr char kSessionSanPrefix[] = "urn:lazaret:session:";

using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// The session's identity: its certificate directory, loaded.
class ClientIdentity {
 public:
  // Reads <certs_dir>/ca.pem, client.pem, client.key. NotFound when one is
  // missing; InvalidArgument when one does not parse, the key does not
  // match, or the client certificate names no session
  // (urn:lazaret:session:<profile>:<session_id>).
  static absl::StatusOr<std::unique_ptr<ClientIdentity>> Load(const std::string& certs_dir);
  ~ClientIdentity();
  ClientIdentity(const ClientIdentity&) = delete;
  ClientIdentity& operator=(const ClientIdentity&) = delete;

  const std::string& profile() const { return profile_; }
  const std::string& session_id() const { return session_id_; }
  SSL_CTX* ctx() const { return ctx_; }

 private:
  ClientIdentity(SSL_CTX* ctx, std::string profile, std::string session_id)
      : ctx_(ctx), profile_(std::move(profile)), session_id_(std::move(session_id)) {}
  SSL_CTX* ctx_;
  std::string profile_;
  std::string session_id_;
};

// One connection. Every operation waits at most until the deadline
// (DeadlineExceeded after it).
class TlsStream : public ByteStream {
 public:
  // Connects over TCP to `endpoint` (the session's relay, which passes the
  // bytes to the broker's socket unread) and completes the handshake.
  // Unavailable when the connection is refused, or closed or reset before
  // the broker sent one byte (the relay could not reach the broker);
  // Unauthenticated when the handshake fails or the broker's certificate is
  // not the broker's; DataLoss when the connection breaks (also later, in
  // Read and WriteAll).
  static absl::StatusOr<std::unique_ptr<TlsStream>> Connect(const ClientIdentity& identity,
                                                            const std::string& endpoint,
                                                            Deadline deadline);
  ~TlsStream() override;
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  absl::StatusOr<size_t> Read(void* buf, size_t len) override;
  absl::Status WriteAll(const void* buf, size_t len) override;

 private:
  TlsStream(int fd, SSL* ssl, Deadline deadline) : fd_(fd), ssl_(ssl), deadline_(deadline) {}
  // Waits for what the last SSL call wanted (`ret` its return value).
  absl::Status Wait(int ret, const char* what);
  int fd_;
  SSL* ssl_;
  Deadline deadline_;
};

}  // namespace lazaret::escalation::client

#endif  // LAZARET_ESCALATE_CLIENT_TLS_STREAM_H_
