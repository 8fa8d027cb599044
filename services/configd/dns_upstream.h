// network.dns_upstream entries: the resolvers lazaret-netpolicyd asks on
// the host for the names a profile allows. Part of lazaret_config (runs in
// lazaret-configd and the loader fuzzer). Input is untrusted configuration
// text, possibly written by the agent.
#ifndef LAZARET_SERVICES_CONFIGD_DNS_UPSTREAM_H_
#define LAZARET_SERVICES_CONFIGD_DNS_UPSTREAM_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::config {

inline constexpr int kDefaultDnsPort = 53;

// Accepts an address literal with an optional port: "192.0.2.53",
// "192.0.2.53:5353", "2001:db8::53", "[2001:db8::53]" or
// "[2001:db8::53]:53". The port is decimal 1..65535 without sign or
// leading zeros, 53 when absent. Names (the resolver of a name would need
// a resolver), zone ids, shortened or octal IPv4, spaces, and the
// unspecified, multicast and broadcast addresses are refused. Returns the
// canonical "address:port" ("[v6]:port"), address text from inet_ntop.
absl::StatusOr<std::string> CheckDnsUpstream(absl::string_view text);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_DNS_UPSTREAM_H_
