#include "services/brokerd/tls/tls_stream.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::brokerd::tls {
namespace {

void CountingCallback(int write_p, int /*version*/, int content_type, const void* buf, size_t len,
                      SSL* /*ssl*/, void* arg) {
  // TLS 1.3 reports each decrypted record's inner content type.
  if (write_p == 0 && content_type == SSL3_RT_INNER_CONTENT_TYPE && len >= 1 &&
      static_cast<const unsigned char*>(buf)[0] == SSL3_RT_APPLICATION_DATA) {
    static_cast<RecordCounter*>(arg)->application_records.fetch_add(1);
  }
}

}  // namespace

absl::Status WaitForFd(int fd, short events, absl::Time deadline, const char* what) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": deadline passed"));
    }
    const int64_t ms = std::clamp<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1, 60'000);
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int n = poll(&p, 1, static_cast<int>(ms));
    if (n < 0 && errno != EINTR) return ErrnoStatus(what, errno);
    if (n > 0) return absl::OkStatus();  // ready, or an error the next call reports
  }
}

void CountApplicationRecords(SSL* ssl, RecordCounter* counter) {
  SSL_set_msg_callback(ssl, &CountingCallback);
  SSL_set_msg_callback_arg(ssl, counter);
}

TlsStream::TlsStream(SslPtr ssl, fs::UniqueFd fd, std::unique_ptr<RecordCounter> counter,
                     VerifiedPeer peer, pid_t peer_pid, absl::Time deadline)
    : counter_(std::move(counter)),
      fd_(std::move(fd)),
      ssl_(std::move(ssl)),
      peer_(std::move(peer)),
      peer_pid_(peer_pid),
      deadline_(deadline) {}

TlsStream::~TlsStream() = default;

absl::StatusOr<size_t> TlsStream::Io(bool write, void* buf, size_t len) {
  if (ssl_ == nullptr) return absl::FailedPreconditionError("the TLS stream is closed");
  const char* what = write ? "writing to the TLS peer" : "reading from the TLS peer";
  for (;;) {
    ERR_clear_error();
    size_t done = 0;
    const int r = write ? SSL_write_ex(ssl_.get(), buf, len, &done)
                        : SSL_read_ex(ssl_.get(), buf, len, &done);
    if (r == 1) return done;
    const int err = SSL_get_error(ssl_.get(), r);
    switch (err) {
      case SSL_ERROR_WANT_READ:
        LAZ_RETURN_IF_ERROR(WaitForFd(fd_.get(), POLLIN, deadline_, what));
        break;
      case SSL_ERROR_WANT_WRITE:
        LAZ_RETURN_IF_ERROR(WaitForFd(fd_.get(), POLLOUT, deadline_, what));
        break;
      case SSL_ERROR_ZERO_RETURN:
        if (!write) return 0;
        return absl::UnavailableError("the TLS peer closed the connection");
      case SSL_ERROR_SYSCALL:
        broken_ = true;
        if (errno != 0) return ErrnoStatus(what, errno);
        return absl::UnavailableError(absl::StrCat(what, ": connection cut"));
      default:
        broken_ = true;
        return OpenSslError(what);
    }
  }
}

absl::StatusOr<size_t> TlsStream::Read(void* buf, size_t len) {
  if (len == 0) return 0;
  return Io(false, buf, len);
}

absl::Status TlsStream::WriteAll(const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    LAZ_ASSIGN_OR_RETURN(const size_t n, Io(true, const_cast<char*>(p), len));
    p += n;
    len -= n;
  }
  return absl::OkStatus();
}

absl::Status TlsStream::Close() {
  if (ssl_ == nullptr) return absl::OkStatus();
  if (broken_) {  // OpenSSL forbids SSL_shutdown after a fatal error
    ssl_.reset();
    fd_.reset();
    return absl::OkStatus();
  }
  const absl::Time deadline = std::min(deadline_, absl::Now() + absl::Seconds(1));
  absl::Status status;
  for (;;) {
    ERR_clear_error();
    const int r = SSL_shutdown(ssl_.get());
    if (r >= 0) break;  // 0: our close_notify is sent; the peer's is not awaited
    const int err = SSL_get_error(ssl_.get(), r);
    if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
      status = WaitForFd(fd_.get(), err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline,
                         "sending close_notify");
      if (status.ok()) continue;
    } else {
      status = OpenSslError("sending close_notify");
    }
    break;
  }
  ssl_.reset();
  fd_.reset();
  return status;
}

}  // namespace lazaret::brokerd::tls
