// How `lazaret net` prints lazaret-netpolicyd's answers: the policy table
// with each rule's source, a destination test with the kernel's answer,
// log lines, applied generations. Runs in the `lazaret` CLI. Pure
// functions of the messages (and the current time, passed in), so every
// line can be unit-tested. Names and details that came from a session's
// DNS traffic are the agent's text: everything printed from a message is
// escaped for the terminal (config/terminal_text.h).
#ifndef LAZARET_CLIENTS_LAZARET_NET_FORMAT_H_
#define LAZARET_CLIENTS_LAZARET_NET_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_field.h"
#include "lazaret/egress/v1/egress.pb.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"
#include "lazaret/netrouter/v1/netrouter.pb.h"

namespace lazaret::cli::net {

// "53 s", "9 min", "2 h 5 min"; "expired" for <= 0.
std::string RemainingText(int64_t seconds);

// One rule's source: "user /home/u/.config/lazaret/config.toml:12
// profiles.p.allow_egress", "host address eth0", "derived from 10.0.0.0/8",
// "name api.x.com, expires in 53 s", "live, expires in 9 min". `now_unix`
// is the current time.
std::string RuleSourceText(const ::lazaret::netpolicy::v1::RuleSource& source, int64_t now_unix);

// The router's digest of a route table (netrouter.proto ApplyPolicyResponse):
// SHA-256 over the routes sorted by family, address and prefix length, as
// "allow CIDR\n" / "prohibit CIDR\n" lines. An error for a route that is
// not a valid CIDR or has no action.
absl::StatusOr<std::string> RoutesDigest(
    const google::protobuf::RepeatedPtrField<::lazaret::netrouter::v1::Route>& routes);

// `lazaret net show`: profile, generation, digest, names_unrestricted,
// the upstreams, the rules table, the names, and the installed routes with
// whether they match the applied digest.
std::string PolicyText(const ::lazaret::netpolicy::v1::SessionPolicy& policy, int64_t now_unix);

// `lazaret net show --json`: the protobuf JSON mapping of SessionPolicy
// (proto field names, every field printed, so the keys are stable).
absl::StatusOr<std::string> PolicyJson(const ::lazaret::netpolicy::v1::SessionPolicy& policy);

// `lazaret net test`: the verdict for `destination` ("host:port/tcp"), the
// name policy's answer for a name, then each address with its deciding
// rule and the kernel's answer.
std::string TestText(const ::lazaret::netpolicy::v1::TestDestinationResponse& response,
                     const std::string& destination, int64_t now_unix);

// `lazaret net log`: one line per entry - time (UTC), kind, then for a
// connect the process, destination:port and the deciding rule, for a name
// the name, query type and addresses, then the detail and a count of
// folded repeats. Every string is escaped: names and processes come from
// the sandbox.
std::string LogLine(const ::lazaret::netpolicy::v1::LogEntry& entry);

// One line of `lazaret net log --requests`: time, protocol, method, host
// and path, status, bytes up and down, duration, the secrets injected
// (names), the deciding rule, and why it was refused when it was. Every
// field from the proxy is escaped for the terminal (the sandbox wrote the
// method, host and path).
std::string RequestLine(const ::lazaret::egress::v1::RequestRecord& record);
// `lazaret net log --requests --json`: the record's protobuf JSON mapping
// (proto field names) on one line, with its newline.
absl::StatusOr<std::string> RequestJson(const ::lazaret::egress::v1::RequestRecord& record);

// `lazaret net log --json`: the entry's protobuf JSON mapping (proto field
// names) on one line, with its newline.
absl::StatusOr<std::string> LogEntryJson(const ::lazaret::netpolicy::v1::LogEntry& entry);

// "generation 8 (25 routes, digest 3f2a...)".
std::string AppliedText(const ::lazaret::netpolicy::v1::PolicyApplied& applied);

}  // namespace lazaret::cli::net

#endif  // LAZARET_CLIENTS_LAZARET_NET_FORMAT_H_
