// lazaret-netrouter: the Netlink router inside the shell-less network sidecar (runc, FROM scratch).
// Applies typed route operations to the network namespace the agent sandbox shares. CAP_NET_ADMIN
// is the only capability it keeps.
#ifndef LAZARET_SIDECAR_NETROUTER_H_
#define LAZARET_SIDECAR_NETROUTER_H_

#include <sys/capability.h>

#include <array>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/common/service_main.h"

namespace lazaret::netrouter {

// The capabilities this process keeps; everything else is dropped at start.
// deploy/capabilities.toml restates this set and a test compares the two.
inline constexpr std::array<cap_value_t, 1> kCapabilities = {CAP_NET_ADMIN};

// The largest request the router's socket accepts: an ApplyPolicy of
// kMaxPolicyRoutes IPv6 routes fits (about 60 bytes each).
inline constexpr int kMaxRequestBytes = 16 << 20;

// The router: before the socket answers, the namespace is closed (table 100
// holds only the prohibit defaults, the rules are in place), the
// neighbour discipline holds, the DNS listeners are bound and, in a session
// with escalation, the escalation relay listens, and in a session with an
// egress proxy, the egress listener; see docs/networking.md.

// The router's own flags, besides the service flags (--runtime-dir,
// --socket). Written by the `lazaret` CLI into the sidecar's command line.
struct RouterOptions {
  // --escalation-socket=PATH: the broker's escalate.sock as the sidecar
  // sees it (the session's socket directory, bound read-only); set: the
  // escalation relay (escalation_relay.h) listens. Empty: no escalation.
  std::string escalation_socket;
  // --egress-socket=PATH: the egress channel's socket, in the router's
  // directory (host side <session dir>/router/); set: the egress listener
  // (egress_listener.h) binds 127.0.80.1:443 and :80 and waits there for
  // lazaret-egressd. Empty: the session has no egress proxy.
  std::string egress_socket;
};

// Takes the router's own flags out of `args` (argv[0] first, kept), leaving
// the service flags for ServiceMain. A malformed router flag is an error.
absl::StatusOr<RouterOptions> TakeRouterFlags(std::vector<char*>* args);

ServiceSpec Spec(const RouterOptions& options = {});

absl::Status Run(const ServiceOptions& options);

}  // namespace lazaret::netrouter

#endif  // LAZARET_SIDECAR_NETROUTER_H_
