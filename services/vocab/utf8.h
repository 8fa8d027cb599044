// UTF-8 decoding, encoding and validation (RFC 3629: shortest forms, no
// surrogates, nothing above U+10FFFF), the one implementation every
// process uses. Part of lazaret_vocab: runs anywhere (host services, the
// CLI, the static in-sandbox binaries); it distrusts its input and accepts
// any bytes: an invalid byte is not dropped but decoded to a code point of
// its own (U+DC80 + the byte - a lone surrogate no valid UTF-8 can carry),
// so decoding and encoding again gives back the same bytes.
#ifndef LAZARET_SERVICES_VOCAB_UTF8_H_
#define LAZARET_SERVICES_VOCAB_UTF8_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

inline constexpr char32_t kInvalidByteBase = 0xDC00;

inline bool IsInvalidByte(char32_t cp) { return cp >= 0xDC80 && cp <= 0xDCFF; }

// The code point at `*pos` of `s`; advances `*pos` past it. `*pos` < size.
char32_t DecodeNext(absl::string_view s, size_t* pos);

// Appends `cp` as UTF-8 (an IsInvalidByte code point as its single byte).
void AppendUtf8(char32_t cp, std::string* out);

std::u32string DecodeAll(absl::string_view s);
std::string EncodeAll(const std::u32string& s);

// OK when `s` is valid UTF-8; else InvalidArgument naming the byte offset
// of the first invalid sequence.
absl::Status CheckUtf8(absl::string_view s);
bool IsValidUtf8(absl::string_view s);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_UTF8_H_
