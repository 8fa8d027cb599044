#include "services/wire/strict_json.h"

#include <cstdint>
#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "services/common/status_util.h"
#include "services/vocab/utf8.h"

namespace lazaret::escalation {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::OneofDescriptor;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A recursive-descent walk over already UTF-8-checked text. Recursion is
// bounded by kMaxJsonDepth.
class Checker {
 public:
  explicit Checker(absl::string_view text) : text_(text) {}

  absl::Status Document(const Descriptor& root) {
    SkipSpace();
    if (!Peek('{')) return Error("the message is not a JSON object");
    LAZ_RETURN_IF_ERROR(Object(&root, 1));
    SkipSpace();
    if (pos_ != text_.size()) return Error("trailing data after the JSON object");
    return absl::OkStatus();
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(what, " at byte ", pos_));
  }
  bool Peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  // A field's value: an array for a repeated field (of objects for a
  // message field, of scalars otherwise), an object for a message field, a
  // scalar otherwise; null anywhere a value may be.
  absl::Status FieldValue(const FieldDescriptor& field, int depth) {
    SkipSpace();
    if (field.is_map()) return Error("a map field");
    if (field.is_repeated() && Peek('[')) return Array(field, depth + 1);
    if (field.is_repeated() && !Peek('n')) return Error("a repeated field that is not an array");
    return Element(field, depth);
  }

  absl::Status Element(const FieldDescriptor& field, int depth) {
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end of the JSON text");
    const char c = text_[pos_];
    if (c == '{') {
      if (field.message_type() == nullptr) return Error("an object where a scalar belongs");
      return Object(field.message_type(), depth + 1);
    }
    if (c == '[') return Error("an array where a single value belongs");
    if (text_.substr(pos_, 4) == "null") {
      pos_ += 4;
      return absl::OkStatus();
    }
    if (field.message_type() != nullptr) return Error("a scalar where an object belongs");
    if (c == '"') return String(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return Number();
    for (absl::string_view word : {"true", "false"}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return absl::OkStatus();
      }
    }
    return Error("not a JSON value");
  }

  absl::Status Object(const Descriptor* message, int depth) {
    if (depth > kMaxJsonDepth) return Error("JSON nested deeper than 4 levels");
    ++pos_;  // '{'
    std::set<std::string> keys;
    std::set<const OneofDescriptor*> oneofs;
    SkipSpace();
    if (Peek('}')) {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      SkipSpace();
      if (!Peek('"')) return Error("expected a quoted key");
      std::string key;
      LAZ_RETURN_IF_ERROR(String(&key));
      const FieldDescriptor* field = message->FindFieldByName(key);
      if (field == nullptr) {
        return Error(absl::StrCat("unknown field ", QuoteForError(key), " in ", message->name()));
      }
      if (!keys.insert(key).second) {
        return Error(absl::StrCat("duplicate key ", QuoteForError(key)));
      }
      if (const OneofDescriptor* oneof = field->real_containing_oneof(); oneof != nullptr) {
        if (!oneofs.insert(oneof).second) {
          return Error(absl::StrCat("more than one member of ", oneof->name()));
        }
      }
      SkipSpace();
      if (!Peek(':')) return Error("expected ':' after a key");
      ++pos_;
      LAZ_RETURN_IF_ERROR(FieldValue(*field, depth));
      SkipSpace();
      if (Peek(',')) {
        ++pos_;
        continue;
      }
      if (Peek('}')) {
        ++pos_;
        return absl::OkStatus();
      }
      return Error("expected ',' or '}' in an object");
    }
  }

  absl::Status Array(const FieldDescriptor& field, int depth) {
    if (depth > kMaxJsonDepth) return Error("JSON nested deeper than 4 levels");
    ++pos_;  // '['
    SkipSpace();
    if (Peek(']')) {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      LAZ_RETURN_IF_ERROR(Element(field, depth));
      SkipSpace();
      if (Peek(',')) {
        ++pos_;
        continue;
      }
      if (Peek(']')) {
        ++pos_;
        return absl::OkStatus();
      }
      return Error("expected ',' or ']' in an array");
    }
  }

  absl::StatusOr<uint32_t> Hex4() {
    if (text_.size() - pos_ < 4) return Error("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = HexValue(text_[pos_ + k]);
      if (h < 0) return Error("bad \\u escape");
      v = (v << 4) | static_cast<uint32_t>(h);
    }
    pos_ += 4;
    return v;
  }

  // A string; its decoded value goes to `out` when not null.
  absl::Status String(std::string* out) {
    ++pos_;  // '"'
    while (true) {
      if (pos_ >= text_.size()) return Error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (c < 0x20) return Error("a control character inside a string");
      if (c != '\\') {
        if (out != nullptr) out->push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) return Error("unterminated string");
      const char e = text_[pos_++];
      char simple = 0;
      switch (e) {
        case '"':
          simple = '"';
          break;
        case '\\':
          simple = '\\';
          break;
        case '/':
          simple = '/';
          break;
        case 'b':
          simple = '\b';
          break;
        case 'f':
          simple = '\f';
          break;
        case 'n':
          simple = '\n';
          break;
        case 'r':
          simple = '\r';
          break;
        case 't':
          simple = '\t';
          break;
        case 'u':
          break;
        default:
          return Error("bad escape in a string");
      }
      if (simple != 0) {
        if (out != nullptr) out->push_back(simple);
        continue;
      }
      LAZ_ASSIGN_OR_RETURN(uint32_t cp, Hex4());
      if (cp == 0) return Error("\\u0000 in a string");
      if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("lone low surrogate escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (text_.substr(pos_, 2) != "\\u") return Error("lone high surrogate escape");
        pos_ += 2;
        LAZ_ASSIGN_OR_RETURN(uint32_t low, Hex4());
        if (low < 0xDC00 || low > 0xDFFF) return Error("lone high surrogate escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
      if (out != nullptr) vocab::AppendUtf8(cp, out);
    }
  }

  absl::Status Number() {
    const auto digit = [&] {
      return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9';
    };
    if (Peek('-')) ++pos_;
    if (Peek('0')) {
      ++pos_;
    } else if (digit()) {
      while (digit()) ++pos_;
    } else {
      return Error("bad number");
    }
    if (Peek('.')) {
      ++pos_;
      if (!digit()) return Error("bad number");
      while (digit()) ++pos_;
    }
    if (Peek('e') || Peek('E')) {
      ++pos_;
      if (Peek('+') || Peek('-')) ++pos_;
      if (!digit()) return Error("bad number");
      while (digit()) ++pos_;
    }
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::Status CheckStrictJson(absl::string_view json, const Descriptor& root) {
  if (const size_t nul = json.find('\0'); nul != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("NUL byte at byte ", nul));
  }
  LAZ_RETURN_IF_ERROR(vocab::CheckUtf8(json));
  return Checker(json).Document(root);
}

std::string QuoteForError(absl::string_view text) {
  constexpr size_t kMaxEcho = 64;
  const bool cut = text.size() > kMaxEcho;
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMaxEcho)), cut ? "...\"" : "\"");
}

}  // namespace lazaret::escalation
