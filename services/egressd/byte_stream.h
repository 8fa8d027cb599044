// A non-blocking bidirectional byte stream: a TLS connection (tls.h) or a
// plain socket. The egress proxy runs each client connection in one thread
// that polls both of its streams (an OpenSSL connection may not be read and
// written from two threads at once), so every call returns at once.
#ifndef LAZARET_SERVICES_EGRESSD_BYTE_STREAM_H_
#define LAZARET_SERVICES_EGRESSD_BYTE_STREAM_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/common/fs/fd.h"

namespace lazaret::egressd {

enum class IoStatus {
  kOk,      // *done bytes moved (> 0)
  kAgain,   // nothing now: poll fd() for WantEvents(), or HasBuffered()
  kClosed,  // orderly end from the peer (reads only)
  kError,   // reset, TLS failure, or a write after ShutdownWrite
};

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  virtual IoStatus Read(char* buf, size_t cap, size_t* done) = 0;
  virtual IoStatus Write(const char* data, size_t len, size_t* done) = 0;
  // Ends the sending direction (TLS close_notify, then shutdown(SHUT_WR)).
  virtual void ShutdownWrite() = 0;

  // The descriptor to poll, and the events the last kAgain waits for (a
  // TLS read can need POLLOUT during a renegotiation-free key update, a
  // write POLLIN). POLLIN when nothing returned kAgain yet.
  virtual int fd() const = 0;
  virtual short WantEvents() const = 0;
  // True when Read would return data without the descriptor being readable
  // (decrypted TLS bytes already buffered).
  virtual bool HasBuffered() const = 0;

  // The ALPN protocol the handshake chose ("h2", "http/1.1"), empty for
  // none or a plain stream; the SNI name a TLS server side was sent.
  virtual std::string Alpn() const { return {}; }
  virtual std::string ServerName() const { return {}; }
  // The last error, for logs; never carries request data.
  virtual std::string LastError() const { return {}; }
};

// A plain TCP (or Unix) socket as a ByteStream: the port-80 side of the
// proxy and plain upstreams. Takes the descriptor and makes it
// non-blocking. Writes use MSG_NOSIGNAL: a peer gone is kError, never a
// SIGPIPE.
class SocketStream : public ByteStream {
 public:
  explicit SocketStream(fs::UniqueFd fd);
  IoStatus Read(char* buf, size_t cap, size_t* done) override;
  IoStatus Write(const char* data, size_t len, size_t* done) override;
  void ShutdownWrite() override;
  int fd() const override { return fd_.get(); }
  short WantEvents() const override { return want_; }
  bool HasBuffered() const override { return false; }
  std::string LastError() const override { return last_error_; }

 private:
  fs::UniqueFd fd_;
  short want_;
  bool write_shut_ = false;
  std::string last_error_;
};

// Sequential use of a stream by the one thread that serves a connection:
// these wait in poll(2) for the stream until `deadline`.
//
// Reads at least one byte: kOk with *done > 0, kClosed, kError, or kAgain
// when the deadline passed first.
IoStatus ReadBefore(ByteStream& stream, char* buf, size_t cap, size_t* done, absl::Time deadline);
// Writes all of `data`: kOk, kError, or kAgain when the deadline passed
// first (part may have been written).
IoStatus WriteAllBefore(ByteStream& stream, absl::string_view data, absl::Time deadline);

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_BYTE_STREAM_H_
