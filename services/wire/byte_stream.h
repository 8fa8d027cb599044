// A bidirectional byte stream: what the escalation frames travel over. Used
// in lazaret-escalate (inside the sandbox, static) and in lazaret-brokerd
// (host); the TLS connection implements it on both sides, tests implement it
// over a string. The peer behind it is untrusted.
#ifndef LAZARET_SERVICES_WIRE_BYTE_STREAM_H_
#define LAZARET_SERVICES_WIRE_BYTE_STREAM_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace lazaret::escalation {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads at most `len` bytes into `buf`; returns how many, 0 at a clean end
  // of stream. An error or the stream's deadline is a non-OK status.
  virtual absl::StatusOr<size_t> Read(void* buf, size_t len) = 0;
  // Writes all `len` bytes or fails.
  virtual absl::Status WriteAll(const void* buf, size_t len) = 0;
};

}  // namespace lazaret::escalation

#endif  // LAZARET_SERVICES_WIRE_BYTE_STREAM_H_
