// libFuzzer target for the egress channel's messages
// (services/wire/egress_channel.h): each side of the channel distrusts the
// other's datagrams. Properties: nothing crashes or reads out of bounds; a
// datagram that decodes encodes back to exactly the same bytes (every
// field a type does not use must be zero, so the form is canonical); the
// same bytes received on a real SOCK_SEQPACKET socket without a descriptor
// are refused exactly when the message needs one.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "services/wire/egress_channel.h"

namespace egress = lazaret::egress;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<egress::Message> decoded = egress::Decode(data, size);
  if (decoded.ok()) {
    std::array<uint8_t, egress::kMessageBytes> again = egress::Encode(*decoded);
    if (size != again.size() || std::memcmp(again.data(), data, size) != 0) abort();
  }
  if (size == 0 || size > 256) return 0;
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  if (send(fds[0], data, size, MSG_NOSIGNAL) == static_cast<ssize_t>(size)) {
    absl::StatusOr<std::optional<egress::Received>> got =
        egress::ReceiveWithFd(fds[1], MSG_DONTWAIT);
    const bool needs_fd = decoded.ok() && egress::CarriesFd(*decoded);
    if (got.ok() && got->has_value()) {
      // Accepted: it decoded, needs no descriptor and carries none.
      if (!decoded.ok() || needs_fd || (*got)->fd.valid()) abort();
    } else if (got.ok()) {
      abort();  // a datagram was queued: it must be received or refused
    } else if (decoded.ok() && !needs_fd) {
      abort();  // a valid message without a descriptor must be taken
    }
  }
  close(fds[0]);
  close(fds[1]);
  return 0;
}
