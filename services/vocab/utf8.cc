#include "services/vocab/utf8.h"

#include "absl/strings/str_cat.h"

namespace lazaret::vocab {

char32_t DecodeNext(absl::string_view s, size_t* pos) {
  const auto b0 = static_cast<unsigned char>(s[*pos]);
  const char32_t invalid = kInvalidByteBase + b0;
  if (b0 < 0x80) {
    ++*pos;
    return b0;
  }
  size_t len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++*pos;
    return invalid;
  }
  if (*pos + len > s.size()) {
    ++*pos;
    return invalid;
  }
  for (size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[*pos + i]);
    if ((b & 0xC0) != 0x80) {
      ++*pos;
      return invalid;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*pos;
    return invalid;
  }
  *pos += len;
  return cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (IsInvalidByte(cp)) {
    out->push_back(static_cast<char>(cp - kInvalidByteBase));
  } else if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::u32string DecodeAll(absl::string_view s) {
  std::u32string out;
  size_t pos = 0;
  while (pos < s.size()) out.push_back(DecodeNext(s, &pos));
  return out;
}

std::string EncodeAll(const std::u32string& s) {
  std::string out;
  for (char32_t cp : s) AppendUtf8(cp, &out);
  return out;
}

absl::Status CheckUtf8(absl::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t at = pos;
    if (IsInvalidByte(DecodeNext(s, &pos))) {
      return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 at byte ", at));
    }
  }
  return absl::OkStatus();
}

bool IsValidUtf8(absl::string_view s) { return CheckUtf8(s).ok(); }

}  // namespace lazaret::vocab
