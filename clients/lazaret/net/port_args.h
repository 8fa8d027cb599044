// The arguments of `lazaret port SESSION add SPEC | rm HOSTPORT | ls` and of
// `lazaret run -p SPEC`: inbound forwards from the host's loopback into a
// session's sandbox (docs/networking.md "Inbound ports"). Runs in the CLI;
// the text is the user's own command line.
#ifndef LAZARET_CLIENTS_LAZARET_NET_PORT_ARGS_H_
#define LAZARET_CLIENTS_LAZARET_NET_PORT_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lazaret/common/v1/common.pb.h"

namespace lazaret::cli::net {

inline constexpr char kPortUsage[] =
    "usage: lazaret port SESSION add [ADDRESS:]HOSTPORT[:SANDBOXPORT]\n"
    "       lazaret port SESSION rm HOSTPORT\n"
    "       lazaret port SESSION ls\n";

inline constexpr char kPortHelp[] =
    "lazaret port SESSION add [ADDRESS:]HOSTPORT[:SANDBOXPORT]\n"
    "    Forward HOSTPORT of the host's loopback (127.0.0.1 and ::1) to\n"
    "    SANDBOXPORT (default: HOSTPORT) of the sandbox's own loopback, at\n"
    "    once. ADDRESS binds another host address instead: only when you\n"
    "    write it (\"0.0.0.0:8080:3000\" opens it to your network). Host ports\n"
    "    below 1024 are refused. lazaret run -p SPEC does the same at start.\n"
    "lazaret port SESSION rm HOSTPORT\n"
    "    Close the forward and its connections.\n"
    "lazaret port SESSION ls\n"
    "    The session's forwards.\n"
    "Forwards close when the session ends.\n";

enum class PortVerb { kAdd, kRemove, kList, kHelp };

struct PortArgs {
  PortVerb verb = PortVerb::kHelp;
  std::string session;  // an id or a unique prefix
  lazaret::common::v1::PortForward port;  // kAdd: the forward; kRemove: host_port
};

// One forward as written: "3000", "8080:3000", "127.0.0.1:1455",
// "[::1]:3000:3000". InvalidArgument with the reason.
absl::StatusOr<lazaret::common::v1::PortForward> ParsePortSpec(absl::string_view spec);

absl::StatusOr<PortArgs> ParsePortArgs(const std::vector<std::string>& args);

// One line per forward: "127.0.0.1 and ::1 port 8080 -> sandbox port 3000".
std::string FormatPorts(const std::vector<lazaret::common::v1::PortForward>& ports);

}  // namespace lazaret::cli::net

#endif  // LAZARET_CLIENTS_LAZARET_NET_PORT_ARGS_H_
