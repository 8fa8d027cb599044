// The escalation wire's messages as JSON payloads (protobuf JSON mapping with
// the original proto field names: request_id, exit_code). Used in
// lazaret-brokerd (host, no capabilities; ParseRequest on what a sandbox
// sends, which is hostile) and in lazaret-escalate (inside the sandbox;
// ParseServerFrame on what the broker sends, checked as strictly).
#ifndef LAZARET_SERVICES_WIRE_MESSAGES_H_
#define LAZARET_SERVICES_WIRE_MESSAGES_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lazaret/escalation/v1/escalation.pb.h"

namespace lazaret::escalation {

inline constexpr size_t kMaxRequestIdLength = 64;
inline constexpr size_t kMaxArgvElements = 4096;
inline constexpr size_t kMaxJustification = 8 * 1024;

// Strict: the structural checks of CheckStrictJson (UTF-8, no NUL, no
// duplicate keys, depth <= 4, original field names only), protobuf's parser
// with unknown fields refused, then the request's own rules:
//   request_id 1-64 characters of [A-Za-z0-9._-];
//   profile a profile name ([a-z0-9][a-z0-9_-]{0,31});
//   exactly one of command and argv non-empty; argv at most 4096 elements
//   and argv[0] not empty (later elements may be); command not empty when
//   it is the one;
//   justification at most 8 KiB;
//   cwd empty or absolute.
// InvalidArgument otherwise, in plain ASCII, echoing at most 64 bytes of
// input (escaped).
absl::StatusOr<v1::EscalateRequest> ParseRequest(absl::string_view json);

// Strict like ParseRequest (structure, unknown fields); exactly one of
// pending and result is set.
absl::StatusOr<v1::ServerFrame> ParseServerFrame(absl::string_view json);

// One-line JSON, original field names, every field printed (exit_code 0
// and approved false included). String fields must be valid UTF-8 (what
// ParseRequest accepted is); a message that cannot be printed yields "".
std::string SerializeRequest(const v1::EscalateRequest& request);
std::string SerializeServerFrame(const v1::ServerFrame& frame);
// The final response alone, as lazaret-escalate --json prints it.
std::string SerializeResponse(const v1::EscalateResponse& response);

}  // namespace lazaret::escalation

#endif  // LAZARET_SERVICES_WIRE_MESSAGES_H_
