#include "clients/lazaret/json/json_writer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/vocab/utf8.h"

namespace lazaret::cli::json {
namespace {

void AppendUnit(char32_t unit, std::string* out) {
  absl::StrAppendFormat(out, "\\u%04x", static_cast<uint32_t>(unit));
}

}  // namespace

std::string Quote(absl::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  size_t pos = 0;
  while (pos < s.size()) {
    const char32_t cp = vocab::DecodeNext(s, &pos);
    if (cp == '"' || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x20 || cp == 0x7F) {
      AppendUnit(cp, &out);
    } else if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (vocab::IsInvalidByte(cp)) {
      // The only surrogates DecodeNext returns stand for invalid bytes.
      AppendUnit(0xFFFD, &out);
    } else if (cp < 0x10000) {
      AppendUnit(cp, &out);
    } else {
      const char32_t v = cp - 0x10000;
      AppendUnit(0xD800 + (v >> 10), &out);
      AppendUnit(0xDC00 + (v & 0x3FF), &out);
    }
  }
  out.push_back('"');
  return out;
}

std::string Array(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) absl::StrAppend(&out, i == 0 ? "" : ",", values[i]);
  out.push_back(']');
  return out;
}

std::string StringArray(const std::vector<std::string>& values) {
  std::vector<std::string> quoted;
  quoted.reserve(values.size());
  for (const std::string& v : values) quoted.push_back(Quote(v));
  return Array(quoted);
}

void Object::Key(absl::string_view key) {
  if (text_.size() > 1) text_.push_back(',');
  absl::StrAppend(&text_, Quote(key), ":");
}

Object& Object::String(absl::string_view key, absl::string_view value) {
  return Raw(key, Quote(value));
}

Object& Object::Int(absl::string_view key, int64_t value) { return Raw(key, absl::StrCat(value)); }

Object& Object::Bool(absl::string_view key, bool value) {
  return Raw(key, value ? "true" : "false");
}

Object& Object::Null(absl::string_view key) { return Raw(key, "null"); }

Object& Object::Raw(absl::string_view key, absl::string_view json) {
  Key(key);
  absl::StrAppend(&text_, json);
  return *this;
}

}  // namespace lazaret::cli::json
