#include "sidecar/dns_message.h"

#include <cstdint>

namespace lazaret::netrouter {
namespace {

constexpr uint8_t kQr = 0x80;
constexpr uint8_t kOpcodeMask = 0x78;
constexpr uint8_t kRd = 0x01;
constexpr uint8_t kRa = 0x80;
constexpr uint8_t kServfail = 2;
constexpr size_t kMaxNameBytes = 255;

uint8_t Byte(absl::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

// End of the first question (name, type, class) or 0 when it does not parse.
size_t FirstQuestionEnd(absl::string_view m) {
  size_t i = kDnsHeaderBytes;
  for (;;) {
    if (i >= m.size() || i - kDnsHeaderBytes >= kMaxNameBytes) return 0;
    const uint8_t len = Byte(m, i);
    if (len == 0) {
      ++i;
      break;
    }
    // A compression pointer (or a reserved label type) has no place in the
    // first name of a query.
    if ((len & 0xc0) != 0) return 0;
    i += 1 + len;
  }
  return i + 4 <= m.size() ? i + 4 : 0;
}

}  // namespace

bool IsDnsQuery(absl::string_view message) {
  return message.size() >= kDnsHeaderBytes && (Byte(message, 2) & kQr) == 0;
}

std::optional<std::string> ServfailFor(absl::string_view query) {
  if (query.size() < kDnsHeaderBytes) return std::nullopt;
  std::string out(query.data(), kDnsHeaderBytes);
  out[2] = static_cast<char>(kQr | (Byte(query, 2) & (kOpcodeMask | kRd)));
  out[3] = static_cast<char>(kRa | kServfail);
  const bool has_question = ((Byte(query, 4) << 8) | Byte(query, 5)) > 0;
  const size_t end = has_question ? FirstQuestionEnd(query) : 0;
  for (size_t i = 4; i < kDnsHeaderBytes; ++i) out[i] = 0;
  if (end != 0) {
    out[5] = 1;
    out.append(query.data() + kDnsHeaderBytes, end - kDnsHeaderBytes);
  }
  return out;
}

}  // namespace lazaret::netrouter
