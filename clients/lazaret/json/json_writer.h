// JSON text (RFC 8259) for the CLI's `--json` outputs that are not one
// protobuf message (`lazaret ps`, `lazaret doctor`); a listing that is one
// message is printed with protobuf's JSON printer instead. Runs in the
// user's terminal, as the user. The strings come from the services and
// from host programs, and through them from the sandbox (a profile or
// workspace name, a command line, a program's error text): any bytes at
// all. Every string is escaped so that the output is always one valid JSON
// document in plain ASCII - no byte of it can move a terminal's cursor or
// break a consumer's parser.
#ifndef LAZARET_CLIENTS_LAZARET_JSON_JSON_WRITER_H_
#define LAZARET_CLIENTS_LAZARET_JSON_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace lazaret::cli::json {

// `s` as a JSON string literal, quotes included. `"` and `\` are escaped
// as \" and \\; every control character (U+0000-U+001F, DEL) and every
// non-ASCII code point as \uXXXX (lowercase hex; above U+FFFF as a
// surrogate pair); each byte that is not part of valid UTF-8 as \ufffd
// (JSON text cannot carry it). Printable ASCII stays as it is.
std::string Quote(absl::string_view s);

// An array of values that are JSON text already (from Quote, Object, ...).
std::string Array(const std::vector<std::string>& values);

// A JSON array of strings.
std::string StringArray(const std::vector<std::string>& values);

// Builds one JSON object, members in the order they are added. Keys are
// the caller's constants but are quoted like any string.
class Object {
 public:
  Object& String(absl::string_view key, absl::string_view value);
  Object& Int(absl::string_view key, int64_t value);
  Object& Bool(absl::string_view key, bool value);
  Object& Null(absl::string_view key);
  // `json` is one JSON value already (Quote, Array, another Object's text).
  Object& Raw(absl::string_view key, absl::string_view json);

  // The object's text: "{...}".
  std::string Text() const { return text_ + "}"; }

 private:
  void Key(absl::string_view key);
  std::string text_ = "{";
};

}  // namespace lazaret::cli::json

#endif  // LAZARET_CLIENTS_LAZARET_JSON_JSON_WRITER_H_
