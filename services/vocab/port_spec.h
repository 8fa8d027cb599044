// Inbound port forwards as written in configuration (profiles.<name>.ports)
// and on the command line (`lazaret run --port`, `lazaret port`). Part of
// lazaret_vocab: runs anywhere (lazaret-configd, the CLI, the session
// worker). The text is untrusted.
#ifndef LAZARET_SERVICES_VOCAB_PORT_SPEC_H_
#define LAZARET_SERVICES_VOCAB_PORT_SPEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lazaret::vocab {

// The lowest host port a forward may bind: below it a port is privileged,
// and a sandbox has no business standing in for a system service.
inline constexpr uint32_t kMinForwardHostPort = 1024;

// An inbound port forward: connections to host_address:host_port on the
// host reach sandbox_port on the sandbox's own loopback. An empty
// host_address means the host's loopback (127.0.0.1 and ::1).
struct PortSpec {
  std::string host_address;  // canonical text of an IP literal, or empty
  uint32_t host_port = 0;
  uint32_t sandbox_port = 0;
  bool operator==(const PortSpec& o) const {
    return host_address == o.host_address && host_port == o.host_port &&
           sandbox_port == o.sandbox_port;
  }
};

// Parses [ADDRESS:]HOSTPORT[:SANDBOXPORT]: "3000", "8080:3000",
// "127.0.0.1:1455", "127.0.0.1:1455:1455", "[::1]:3000", "[::]:80:3000".
// An IPv6 address is written in brackets. HOSTPORT is at least
// kMinForwardHostPort; SANDBOXPORT defaults to HOSTPORT.
absl::StatusOr<PortSpec> ParsePortSpec(absl::string_view text);

// The spec the way ParsePortSpec reads it back ("8080:3000",
// "127.0.0.1:1455:1455", "[::1]:3000:3000").
std::string FormatPortSpec(const PortSpec& spec);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_PORT_SPEC_H_
