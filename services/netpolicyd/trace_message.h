// The messages runsc's remote trace sink sends (gVisor runtime monitoring,
// pkg/sentry/seccheck/sinks/remote): the handshake, then one SOCK_SEQPACKET
// message per trace point, an 8-byte header (header size, message type,
// the sink's dropped counter) followed by a protobuf. Pure and bounded.
// Runs in lazaret-netpolicyd, unprivileged. Every byte comes from the
// sandbox's Sentry, which gVisor's threat model does not trust: sizes are
// checked against hard limits, only the Connect type is decoded, and its
// sockaddr is taken only when it is a well-formed AF_INET or AF_INET6
// address.
#ifndef LAZARET_SERVICES_NETPOLICYD_TRACE_MESSAGE_H_
#define LAZARET_SERVICES_NETPOLICYD_TRACE_MESSAGE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/netpolicyd/ip_prefix.h"

namespace lazaret::netpolicyd {

// A message larger than this ends the connection.
inline constexpr size_t kMaxTraceMessage = 64 * 1024;
// The wire version this sink speaks (wire.CurrentVersion).
inline constexpr uint32_t kTraceWireVersion = 1;
// gVisor's MessageType of a connect(2) trace point.
inline constexpr uint16_t kTraceMessageConnect = 10;
// Process names are kept to this many bytes (the kernel's own limit is 16).
inline constexpr size_t kMaxTraceProcessName = 64;

// One connect(2) of the sandbox, as its Sentry reported it.
struct TraceConnect {
  IpPrefix address = IpPrefix::Default(IpPrefix::Family::kIpv4);  // a host prefix
  uint16_t port = 0;
  int64_t errno_value = 0;  // 0: the call succeeded
  int64_t time_ns = 0;      // 0: not reported
  // As the sandbox named it (untrusted), at most kMaxTraceProcessName
  // bytes, printable ASCII kept and every other byte written \xNN.
  std::string process;
};

struct TraceMessage {
  uint16_t type = 0;
  uint32_t dropped = 0;  // the sink's counter of points it could not send; wraps
  // Set for a Connect to an IPv4 or IPv6 address; other types and other
  // address families are not decoded.
  std::optional<TraceConnect> connect;
};

// The first message of a connection: the Sentry's Handshake. Returns its
// version; fails when it is malformed, too large or older than ours.
absl::StatusOr<uint32_t> ParseTraceHandshake(absl::string_view bytes);
// Our answer to it.
std::string TraceHandshakeReply();

// A message after the handshake. Fails when the header is short or names a
// size outside the message, or a Connect does not parse: the connection is
// then ended.
absl::StatusOr<TraceMessage> ParseTraceMessage(absl::string_view bytes);

// A struct sockaddr as bytes: AF_INET (at least 16 bytes) or AF_INET6 (at
// least 24) into an address and a port; anything else is nullopt.
std::optional<std::pair<IpPrefix, uint16_t>> ParseInetSockaddr(absl::string_view bytes);

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_TRACE_MESSAGE_H_
