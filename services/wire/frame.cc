#include "services/wire/frame.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"

namespace lazaret::escalation {
namespace {

// Fills `buf` completely. Returns how many bytes came before a clean end of
// stream (len when all arrived).
absl::StatusOr<size_t> ReadFull(ByteStream& stream, char* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    LAZ_ASSIGN_OR_RETURN(size_t n, stream.Read(buf + got, len - got));
    if (n == 0) break;
    if (n > len - got) return absl::InternalError("stream read past its buffer");
    got += n;
  }
  return got;
}

}  // namespace

absl::StatusOr<std::string> ReadFrame(ByteStream& stream, size_t max_len) {
  unsigned char header[4];
  LAZ_ASSIGN_OR_RETURN(size_t got, ReadFull(stream, reinterpret_cast<char*>(header), 4));
  if (got == 0) return absl::OutOfRangeError("end of stream before a frame");
  if (got < 4) {
    return absl::DataLossError(
        absl::StrCat("truncated frame: the stream ended after ", got, " of 4 header bytes"));
  }
  const uint32_t len = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) |
                       (uint32_t{header[2]} << 8) | uint32_t{header[3]};
  if (len > max_len) {
    return absl::ResourceExhaustedError(
        absl::StrCat("frame of ", len, " bytes is over the limit of ", max_len, " bytes"));
  }
  std::string payload(len, '\0');
  LAZ_ASSIGN_OR_RETURN(size_t body, ReadFull(stream, payload.data(), len));
  if (body < len) {
    return absl::DataLossError(absl::StrCat("truncated frame: the stream ended after ", body,
                                            " of ", len, " payload bytes"));
  }
  return payload;
}

absl::Status WriteFrame(ByteStream& stream, absl::string_view payload) {
  if (payload.size() > kMaxServerFrame) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "frame of ", payload.size(), " bytes is over the limit of ", kMaxServerFrame, " bytes"));
  }
  const uint32_t len = static_cast<uint32_t>(payload.size());
  std::string frame;
  frame.reserve(4 + payload.size());
  frame.push_back(static_cast<char>(len >> 24));
  frame.push_back(static_cast<char>(len >> 16));
  frame.push_back(static_cast<char>(len >> 8));
  frame.push_back(static_cast<char>(len));
  frame.append(payload.data(), payload.size());
  return stream.WriteAll(frame.data(), frame.size());
}

}  // namespace lazaret::escalation
