// Where the sandbox reaches the egress proxy: the address the session's
// DNS answers an intercepted name with (lazaret-netpolicyd) and the TCP
// listeners of the session's network router (lazaret-netrouter, sidecar)
// on it, whose every accepted connection is handed to lazaret-egressd
// over the router's egress channel (egress_channel.h). Constants only, so
// that every zone can include it (docs/networking.md).
#ifndef LAZARET_SERVICES_WIRE_EGRESS_ENDPOINT_H_
#define LAZARET_SERVICES_WIRE_EGRESS_ENDPOINT_H_

#include <cstdint>

namespace lazaret::egress {

// A loopback address of the namespace the sandbox shares with the sidecar,
// apart from 127.0.0.1 so that nothing else listening on the loopback is
// mistaken for the proxy. The router binds both ports on it before the
// sandbox exists, without SO_REUSEADDR, so no process of the sandbox can
// bind them (nor the wildcard address on those ports) first.
inline constexpr char kProxyAddress[] = "127.0.80.1";
// The same address as four octets, network order (the A record's data).
inline constexpr uint8_t kProxyAddressBytes[4] = {127, 0, 80, 1};
inline constexpr uint16_t kHttpsPort = 443;
inline constexpr uint16_t kHttpPort = 80;
// The TTL of an intercepted name's answer, in seconds.
inline constexpr uint32_t kProxyAnswerTtl = 60;

}  // namespace lazaret::egress

#endif  // LAZARET_SERVICES_WIRE_EGRESS_ENDPOINT_H_
