// The structural checks of the escalation wire's JSON, run before protobuf
// sees a byte: lazaret-brokerd (host, no capabilities) runs them on every
// request from a sandbox, lazaret-escalate (inside the sandbox) on every
// frame from the broker. The input is untrusted and may be anything.
#ifndef LAZARET_SERVICES_WIRE_STRICT_JSON_H_
#define LAZARET_SERVICES_WIRE_STRICT_JSON_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace lazaret::escalation {

inline constexpr int kMaxJsonDepth = 4;

// OK when `json` is exactly one JSON object (RFC 8259) of the message type
// `root` such that: the text is valid UTF-8 (no overlong forms, surrogates or
// code points above U+10FFFF, no lone surrogate escapes); there is no NUL,
// raw or as \u0000; objects and arrays nest at most kMaxJsonDepth deep; no
// object has a key twice; every key is the original proto name of a field
// of the message at that place (never the lowerCamelCase JSON name); at most
// one member of a oneof is present. Values are left to protobuf's parser.
// Otherwise InvalidArgument saying what and where, in plain ASCII.
absl::Status CheckStrictJson(absl::string_view json, const google::protobuf::Descriptor& root);

// At most 64 bytes of untrusted `text`, quoted and C-escaped (plain ASCII),
// with "..." when it was longer: what a refusal may echo.
std::string QuoteForError(absl::string_view text);

}  // namespace lazaret::escalation

#endif  // LAZARET_SERVICES_WIRE_STRICT_JSON_H_
