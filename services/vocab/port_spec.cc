#include "services/vocab/port_spec.h"

#include <arpa/inet.h>

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace lazaret::vocab {
namespace {

// A decimal port in [min, 65535], digits only (no sign, no spaces).
absl::StatusOr<uint32_t> ParsePort(absl::string_view text, uint32_t min, const char* what) {
  uint32_t port = 0;
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      !absl::SimpleAtoi(text, &port) || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", text, "\" is not a port number (1 to 65535)"));
  }
  if (port < min) {
    return absl::InvalidArgumentError(
        min == kMinForwardHostPort
            ? absl::StrCat(what, " ", port, " is below ", kMinForwardHostPort,
                           " (a privileged port); choose a host port of 1024 or more, e.g. ",
                           "\"8080:", port, "\"")
            : absl::StrCat(what, " ", port, " is not a port number (1 to 65535)"));
  }
  return port;
}

// The canonical text of an IPv4 or IPv6 literal.
absl::StatusOr<std::string> CanonicalAddress(absl::string_view text, bool v6) {
  const std::string s(text);
  unsigned char buf[16];
  char out[INET6_ADDRSTRLEN];
  const int family = v6 ? AF_INET6 : AF_INET;
  if (s.empty() || inet_pton(family, s.c_str(), buf) != 1 ||
      inet_ntop(family, buf, out, sizeof(out)) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not an IP", v6 ? "v6" : "v4", " address"));
  }
  return std::string(out);
}

}  // namespace

absl::StatusOr<PortSpec> ParsePortSpec(absl::string_view text) {
  PortSpec spec;
  absl::string_view rest = text;
  if (absl::StartsWith(rest, "[")) {
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return absl::InvalidArgumentError(
          "an IPv6 address is written in brackets followed by a port, e.g. \"[::1]:3000\"");
    }
    absl::StatusOr<std::string> addr = CanonicalAddress(rest.substr(1, close - 1), true);
    if (!addr.ok()) return addr.status();
    spec.host_address = *std::move(addr);
    rest = rest.substr(close + 2);
  }
  std::vector<absl::string_view> parts = absl::StrSplit(rest, ':');
  if (spec.host_address.empty()) {
    if (parts.size() == 3 || (parts.size() == 2 && absl::StrContains(parts[0], '.'))) {
      absl::StatusOr<std::string> addr = CanonicalAddress(parts[0], false);
      if (!addr.ok()) return addr.status();
      spec.host_address = *std::move(addr);
      parts.erase(parts.begin());
    } else if (parts.size() > 3) {
      return absl::InvalidArgumentError(
          "write an IPv6 address in brackets, e.g. \"[::1]:3000\"");
    }
  }
  if (parts.empty() || parts.size() > 2) {
    return absl::InvalidArgumentError(
        "a port forward is [ADDRESS:]HOSTPORT[:SANDBOXPORT], e.g. \"3000\", \"8080:3000\" or "
        "\"127.0.0.1:1455\"");
  }
  absl::StatusOr<uint32_t> host = ParsePort(parts[0], kMinForwardHostPort, "host port");
  if (!host.ok()) return host.status();
  spec.host_port = *host;
  spec.sandbox_port = *host;
  if (parts.size() == 2) {
    absl::StatusOr<uint32_t> sandbox = ParsePort(parts[1], 1, "sandbox port");
    if (!sandbox.ok()) return sandbox.status();
    spec.sandbox_port = *sandbox;
  }
  return spec;
}

std::string FormatPortSpec(const PortSpec& spec) {
  std::string addr;
  if (!spec.host_address.empty()) {
    addr = absl::StrContains(spec.host_address, ':') ? absl::StrCat("[", spec.host_address, "]:")
                                                     : absl::StrCat(spec.host_address, ":");
  }
  return absl::StrCat(addr, spec.host_port, ":", spec.sandbox_port);
}

}  // namespace lazaret::vocab
