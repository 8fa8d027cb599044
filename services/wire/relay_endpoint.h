// Where lazaret-escalate reaches its session's broker: the escalation relay
// in the session's network sidecar, on the loopback of the network
// namespace the sandbox shares with the sidecar. The relay (lazaret-netrouter,
// sidecar) listens here and passes each connection's bytes to the broker's
// escalate.sock; the client (sandbox) connects here by default. Constants
// only, so that both zones can include it (docs/escalation.md).
#ifndef LAZARET_SERVICES_WIRE_RELAY_ENDPOINT_H_
#define LAZARET_SERVICES_WIRE_RELAY_ENDPOINT_H_

#include <cstdint>

namespace lazaret::escalation {

// IPv4 loopback only: the relay binds it before the sandbox exists, so no
// process of the sandbox can bind the port (nor the wildcard address on it)
// first.
inline constexpr char kRelayAddress[] = "127.0.0.1";
inline constexpr uint16_t kRelayPort = 7457;
inline constexpr char kRelayEndpoint[] = "127.0.0.1:7457";

}  // namespace lazaret::escalation

#endif  // LAZARET_SERVICES_WIRE_RELAY_ENDPOINT_H_
