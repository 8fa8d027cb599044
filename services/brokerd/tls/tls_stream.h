// One preflighted mTLS connection from a sandbox, as the ByteStream the
// escalation frames travel over. Runs in lazaret-brokerd (host, no
// capabilities). Only TlsAcceptor makes one, and only after the peer's uid,
// certificate chain, validity, session, profile and serial all passed, so
// holding a TlsStream means the peer is the session it names; the bytes it
// sends are still untrusted (the frame parser judges them).
#ifndef LAZARET_SERVICES_BROKERD_TLS_TLS_STREAM_H_
#define LAZARET_SERVICES_BROKERD_TLS_TLS_STREAM_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/wire/byte_stream.h"
#include "services/common/openssl_util.h"
#include "services/brokerd/tls/peer_check.h"
#include "services/common/fs/fd.h"

namespace lazaret::brokerd::tls {

// Waits until `fd` is ready for `events` (POLLIN/POLLOUT) or `deadline`
// passes (DeadlineExceeded).
absl::Status WaitForFd(int fd, short events, absl::Time deadline, const char* what);

// Counts the application-data records OpenSSL decrypted on one connection
// (through its message callback), so that a test - and the acceptor itself
// - can tell that none was read before the preflight passed.
struct RecordCounter {
  std::atomic<uint64_t> application_records{0};
};
// Installs the counting message callback on `ssl`; `counter` must outlive
// every read on it.
void CountApplicationRecords(SSL* ssl, RecordCounter* counter);

// Not thread-safe: one thread reads and writes a stream at a time. The
// process must ignore SIGPIPE (service_main does), so that writing to a
// peer that went away is an error, not the broker's death.
class TlsStream : public escalation::ByteStream {
 public:
  // Without Close(): the connection is dropped without close_notify.
  ~TlsStream() override;
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Reads and writes fail with DeadlineExceeded once `deadline` passes. A
  // new stream's deadline is its handshake's (handshake and request share
  // one budget); the caller moves it for the rest of the exchange.
  void set_deadline(absl::Time deadline) { deadline_ = deadline; }
  absl::Time deadline() const { return deadline_; }

  // 0 at the peer's close_notify; a connection cut without one is an error.
  absl::StatusOr<size_t> Read(void* buf, size_t len) override;
  absl::Status WriteAll(const void* buf, size_t len) override;
  // Sends close_notify (waiting at most a second, never for the peer's
  // reply; none after a fatal error) and closes the socket. Idempotent.
  absl::Status Close();

  const VerifiedPeer& peer() const { return peer_; }
  // The SO_PEERCRED pid: the sidecar's relay, not the agent; for logs only.
  pid_t peer_pid() const { return peer_pid_; }
  uint64_t application_records_read() const { return counter_->application_records.load(); }

 private:
  friend class TlsAcceptor;
  TlsStream(SslPtr ssl, fs::UniqueFd fd, std::unique_ptr<RecordCounter> counter, VerifiedPeer peer,
            pid_t peer_pid, absl::Time deadline);

  // Retries `op` (SSL_read_ex or SSL_write_ex) across WANT_READ/WANT_WRITE
  // until the deadline.
  absl::StatusOr<size_t> Io(bool write, void* buf, size_t len);

  // Declared before ssl_, which points at it, so it is destroyed after.
  std::unique_ptr<RecordCounter> counter_;
  fs::UniqueFd fd_;
  SslPtr ssl_;
  VerifiedPeer peer_;
  pid_t peer_pid_;
  absl::Time deadline_;
  bool broken_ = false;  // a fatal TLS or socket error: no close_notify
};

}  // namespace lazaret::brokerd::tls

#endif  // LAZARET_SERVICES_BROKERD_TLS_TLS_STREAM_H_
