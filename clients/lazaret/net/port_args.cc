#include "clients/lazaret/net/port_args.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "services/vocab/port_spec.h"

namespace lazaret::cli::net {

absl::StatusOr<lazaret::common::v1::PortForward> ParsePortSpec(absl::string_view spec) {
  // The same syntax and checks as profiles.<name>.ports.
  absl::StatusOr<vocab::PortSpec> parsed = vocab::ParsePortSpec(spec);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", spec.substr(0, 64), "\": ", parsed.status().message(),
        " (write [ADDRESS:]HOSTPORT[:SANDBOXPORT], e.g. 3000, 8080:3000 or 127.0.0.1:1455)"));
  }
  lazaret::common::v1::PortForward out;
  out.set_host_address(parsed->host_address);
  out.set_host_port(parsed->host_port);
  out.set_sandbox_port(parsed->sandbox_port);
  return out;
}

absl::StatusOr<PortArgs> ParsePortArgs(const std::vector<std::string>& args) {
  PortArgs out;
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") return out;
  if (args.size() < 2) return absl::InvalidArgumentError("name a session and add, rm or ls");
  out.session = args[0];
  const std::string& verb = args[1];
  if (verb == "ls" || verb == "list") {
    if (args.size() != 2) return absl::InvalidArgumentError("ls takes no more arguments");
    out.verb = PortVerb::kList;
    return out;
  }
  if (verb == "add") {
    if (args.size() != 3) return absl::InvalidArgumentError("add takes one forward");
    absl::StatusOr<lazaret::common::v1::PortForward> p = ParsePortSpec(args[2]);
    if (!p.ok()) return p.status();
    out.verb = PortVerb::kAdd;
    out.port = *std::move(p);
    return out;
  }
  if (verb == "rm" || verb == "remove") {
    uint32_t host = 0;
    if (args.size() != 3 || !absl::SimpleAtoi(args[2], &host) || host == 0 || host > 65535) {
      return absl::InvalidArgumentError("rm takes the host port of the forward");
    }
    out.verb = PortVerb::kRemove;
    out.port.set_host_port(host);
    return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown action \"", verb.substr(0, 32), "\" (add, rm or ls)"));
}

std::string FormatPorts(const std::vector<lazaret::common::v1::PortForward>& ports) {
  if (ports.empty()) return "no forwards\n";
  std::string out;
  for (const auto& p : ports) {
    const std::string host = p.host_address().empty()   ? std::string("127.0.0.1 and ::1")
                             : p.host_address().find(':') != std::string::npos
                                 ? absl::StrCat("[", p.host_address(), "]")
                                 : p.host_address();
    absl::StrAppend(&out, host, " port ", p.host_port(), " -> sandbox port ", p.sandbox_port(),
                    "\n");
  }
  return out;
}

}  // namespace lazaret::cli::net
