// The arguments of `lazaret net` (show, test, log, reload, allow, deny):
// parsed and checked here before anything is sent to lazaret-netpolicyd,
// so that a mistyped CIDR, name, port or duration is refused with a hint
// instead of a remote error. Runs in the `lazaret` CLI; the arguments are
// the developer's, checked strictly all the same (netpolicyd checks again).
#ifndef LAZARET_CLIENTS_LAZARET_NET_ARGS_H_
#define LAZARET_CLIENTS_LAZARET_NET_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::cli::net {

// The synopsis (after a usage error), and the whole --help text.
extern const char kNetUsage[];
extern const char kNetHelp[];

// The longest --for: a live change is for a session, not for good.
inline constexpr uint64_t kMaxChangeSeconds = 7 * 24 * 3600;

enum class NetVerb { kHelp, kShow, kTest, kLog, kReload, kAllow, kDeny };

// A destination of `lazaret net test`: "host:port", "[v6]:port".
struct HostPort {
  std::string host;  // an address (IPv6 without brackets) or a name
  uint32_t port = 0;
};

// What `lazaret net allow|deny` changes: a canonical CIDR or a canonical
// name (exact or "*." wildcard), exactly one of them set.
struct ChangeTarget {
  std::string cidr;
  std::string name;
};

struct NetArgs {
  NetVerb verb = NetVerb::kHelp;
  std::string session;            // as given: an id or a unique prefix; empty for `show` alone
  bool json = false;              // show, log
  bool follow = false;            // log
  bool requests = false;          // log: the egress proxy's request log
  bool udp = false;               // test
  HostPort destination;           // test
  ChangeTarget target;            // allow, deny
  uint64_t duration_seconds = 0;  // allow, deny: 0 for the rest of the session
};

// "30s", "10m", "2h" (one positive decimal number and one unit), at most
// kMaxChangeSeconds.
absl::StatusOr<uint64_t> ParseDuration(absl::string_view text);

// "host:port", "1.2.3.4:port" or "[2001:db8::1]:port"; port 1-65535. A
// bare IPv6 address with a port is refused with the bracketed form as a
// hint.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

// A CIDR (canonicalised; a bare address or host bits get "did you mean")
// or a name, validated like allow_domains entries.
absl::StatusOr<ChangeTarget> ParseChangeTarget(absl::string_view text);

// A name as allow_domains takes it: "api.example.com" or "*.example.com",
// letters, digits and '-', at least two labels, returned lowercase
// without a trailing dot.
absl::StatusOr<std::string> CanonicalName(absl::string_view text);

// Everything after `lazaret net`. Errors say what is wrong; the caller
// prints kNetUsage with them.
absl::StatusOr<NetArgs> ParseNetArgs(const std::vector<std::string>& args);

}  // namespace lazaret::cli::net

#endif  // LAZARET_CLIENTS_LAZARET_NET_ARGS_H_
