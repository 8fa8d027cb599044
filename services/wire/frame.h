// Length-prefixed frames of the escalation wire: a 4-byte big-endian length,
// then that many payload bytes. Used in lazaret-escalate (inside the
// sandbox, unprivileged, static) and in lazaret-brokerd (host, no
// capabilities). The peer is untrusted: a length over the caller's limit is
// refused before one body byte is read or allocated.
#ifndef LAZARET_SERVICES_WIRE_FRAME_H_
#define LAZARET_SERVICES_WIRE_FRAME_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/wire/byte_stream.h"

namespace lazaret::escalation {

// An EscalateRequest frame (client -> broker).
inline constexpr size_t kMaxRequestFrame = 64 * 1024;
// A ServerFrame (broker -> client).
inline constexpr size_t kMaxServerFrame = 4 * 1024 * 1024;

// Reads one frame's payload. Errors:
//   OutOfRange         the stream ended cleanly before the first byte
//                      (the peer closed between frames);
//   DataLoss           the stream ended inside the header or the body;
//   ResourceExhausted  the announced length is over `max_len` (nothing of
//                      the body was read);
//   anything the stream returns (its deadline, a TLS error).
absl::StatusOr<std::string> ReadFrame(ByteStream& stream, size_t max_len);

// Writes one frame. A payload over kMaxServerFrame (the largest frame
// either side accepts) is refused with ResourceExhausted, nothing written.
absl::Status WriteFrame(ByteStream& stream, absl::string_view payload);

}  // namespace lazaret::escalation

#endif  // LAZARET_SERVICES_WIRE_FRAME_H_
