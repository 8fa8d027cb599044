// The little of DNS the router reads: enough to drop what is not a query
// and to build SERVFAIL itself (no relay, no answer in time, too many in
// flight). Runs in lazaret-netrouter (inside the sidecar, CAP_NET_ADMIN
// only) on bytes from any process in the namespace: untrusted, so it reads
// the 12-byte header and at most the first question's name, bounds-checked.
#ifndef LAZARET_SIDECAR_DNS_MESSAGE_H_
#define LAZARET_SIDECAR_DNS_MESSAGE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace lazaret::netrouter {

inline constexpr size_t kDnsHeaderBytes = 12;

// A query worth relaying: at least a header, and the QR bit clear (a
// response sent to the listener is not a question).
bool IsDnsQuery(absl::string_view message);

// SERVFAIL for `query`: its id, opcode and RD bit, QR and RA set, RCODE 2,
// its first question copied when it parses (else no question), no records.
// nullopt for anything shorter than a header.
std::optional<std::string> ServfailFor(absl::string_view query);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_DNS_MESSAGE_H_
