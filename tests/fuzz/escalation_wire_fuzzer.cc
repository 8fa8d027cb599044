// libFuzzer target for the escalation wire (lazaret_escalation_wire): what a
// sandbox sends lazaret-brokerd and what the broker sends lazaret-escalate.
// The input is a stream of frames (first byte odd) or one JSON payload
// (first byte even). Properties: nothing crashes or reads out of bounds; no
// frame over the limit is returned; a request or server frame that parses
// re-serialises and parses back equal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "services/wire/frame.h"
#include "services/wire/messages.h"

namespace esc = lazaret::escalation;

namespace {

class BytesStream : public esc::ByteStream {
 public:
  BytesStream(const char* data, size_t size) : data_(data), size_(size) {}
  absl::StatusOr<size_t> Read(void* buf, size_t len) override {
    // Short reads, so the frame reader's reassembly is exercised.
    const size_t n = std::min({len, size_ - pos_, size_t{4093}});
    std::memcpy(buf, data_ + pos_, n);
    pos_ += n;
    return n;
  }
  absl::Status WriteAll(const void*, size_t) override { return absl::OkStatus(); }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

void CheckPayload(absl::string_view payload) {
  if (auto request = esc::ParseRequest(payload); request.ok()) {
    const std::string json = esc::SerializeRequest(*request);
    auto back = esc::ParseRequest(json);
    if (!back.ok() || back->SerializeAsString() != request->SerializeAsString()) abort();
  }
  if (auto frame = esc::ParseServerFrame(payload); frame.ok()) {
    const std::string json = esc::SerializeServerFrame(*frame);
    auto back = esc::ParseServerFrame(json);
    if (!back.ok() || back->SerializeAsString() != frame->SerializeAsString()) abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const char* rest = reinterpret_cast<const char*>(data) + 1;
  if ((data[0] & 1) == 0) {
    CheckPayload(absl::string_view(rest, size - 1));
    return 0;
  }
  BytesStream stream(rest, size - 1);
  for (int i = 0; i < 8; ++i) {
    auto payload = esc::ReadFrame(stream, esc::kMaxRequestFrame);
    if (!payload.ok()) break;
    if (payload->size() > esc::kMaxRequestFrame) abort();
    CheckPayload(*payload);
  }
  return 0;
}
