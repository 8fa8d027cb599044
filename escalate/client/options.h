// lazaret-escalate's command line (inside the sandbox, unprivileged). The
// arguments come from the agent; they are checked here only for form, the
// broker judges them.
#ifndef LAZARET_ESCALATE_CLIENT_OPTIONS_H_
#define LAZARET_ESCALATE_CLIENT_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/wire/relay_endpoint.h"

namespace lazaret::escalation::client {

// The session's escalation relay, on the loopback the sandbox shares with
// its network sidecar (relay_endpoint.h). The sandbox has no Unix socket of
// the host's: the relay passes the connection to the broker.
inline constexpr const char* kDefaultEndpoint = kRelayEndpoint;
inline constexpr char kDefaultCerts[] = "/run/lazaret/certs";
inline constexpr int kMaxTimeoutSeconds = 7 * 24 * 3600;

struct Options {
  bool help = false;
  std::string justification;
  // The longest the whole exchange may take; none: the broker's own
  // approval and command timeouts bound it.
  std::optional<int> timeout_seconds;
  bool json = false;
  std::string endpoint = kDefaultEndpoint;  // IPV4:PORT, checked by ParseOptions
  std::string certs_dir = kDefaultCerts;
  // Empty: getcwd() at run time.
  std::string cwd;
  // Exactly one of them is set (unless help).
  std::optional<std::string> command;
  std::vector<std::string> argv;
};

// `args` excludes the program name. InvalidArgument says what is wrong.
absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args);

// An --endpoint value: a dotted IPv4 address, a colon, a port 1-65535.
struct Endpoint {
  std::string address;
  uint16_t port = 0;
};
absl::StatusOr<Endpoint> ParseEndpoint(const std::string& text);

// The --help text, exit codes included.
const char* HelpText();

}  // namespace lazaret::escalation::client

#endif  // LAZARET_ESCALATE_CLIENT_OPTIONS_H_
