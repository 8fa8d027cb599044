#include "services/configd/dns_upstream.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace lazaret::config {
namespace {

std::optional<int> ParsePort(absl::string_view s) {
  if (s.empty() || s.size() > 5 || s[0] == '0') return std::nullopt;
  int port = 0;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port < 1 || port > 65535) return std::nullopt;
  return port;
}

}  // namespace

absl::StatusOr<std::string> CheckDnsUpstream(absl::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("empty resolver address");
  const std::string q = absl::StrCat("\"", text, "\"");
  if (text.size() > 64) return absl::InvalidArgumentError(absl::StrCat(q, " is too long"));
  if (!std::all_of(text.begin(), text.end(), [](char c) {
        return absl::ascii_isxdigit(static_cast<unsigned char>(c)) || c == '.' || c == ':' ||
               c == '[' || c == ']';
      })) {
    const bool letters = std::any_of(text.begin(), text.end(), [](char c) {
      return absl::ascii_isalpha(static_cast<unsigned char>(c));
    });
    return absl::InvalidArgumentError(
        absl::StrCat(q, letters ? " is not an address (resolvers are given by address, not by "
                                  "name)"
                                : " is not an address with an optional port"));
  }
  absl::string_view addr = text;
  absl::string_view port_text;
  bool v6 = false;
  if (absl::StartsWith(text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(q, " has no closing ']'"));
    }
    addr = text.substr(1, close - 1);
    absl::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        return absl::InvalidArgumentError(absl::StrCat(q, ": after ']' only \":port\" may follow"));
      }
      port_text = rest.substr(1);
      if (port_text.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(q, " has an empty port"));
      }
    }
    v6 = true;
  } else {
    const size_t colons = std::count(text.begin(), text.end(), ':');
    if (colons == 1) {
      addr = text.substr(0, text.find(':'));
      port_text = text.substr(text.find(':') + 1);
      if (port_text.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(q, " has an empty port"));
      }
    } else {
      v6 = colons > 1;
    }
    if (text.find(']') != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(q, " has a ']' without '['"));
    }
  }
  std::array<uint8_t, 16> bytes{};
  const std::string addr_str(addr);
  if (inet_pton(v6 ? AF_INET6 : AF_INET, addr_str.c_str(), bytes.data()) != 1) {
    if (!v6 && std::any_of(addr.begin(), addr.end(), [](char c) {
          return absl::ascii_isalpha(static_cast<unsigned char>(c));
        })) {
      return absl::InvalidArgumentError(
          absl::StrCat(q, " is not an address (resolvers are given by address, not by name)"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(q, " is not a valid ", v6 ? "IPv6" : "IPv4", " address",
                     v6 ? " (with a port, write it in brackets: \"[2001:db8::53]:53\")" : ""));
  }
  int port = kDefaultDnsPort;
  if (!port_text.empty()) {
    std::optional<int> p = ParsePort(port_text);
    if (!p) {
      return absl::InvalidArgumentError(
          absl::StrCat(q, " has an invalid port (1 to 65535, decimal)"));
    }
    port = *p;
  }
  const bool unspecified =
      std::all_of(bytes.begin(), bytes.begin() + (v6 ? 16 : 4), [](uint8_t b) { return b == 0; });
  const bool multicast = v6 ? bytes[0] == 0xff : (bytes[0] & 0xf0) == 0xe0;
  const bool broadcast =
      !v6 && std::all_of(bytes.begin(), bytes.begin() + 4, [](uint8_t b) { return b == 0xff; });
  if (unspecified || multicast || broadcast) {
    return absl::InvalidArgumentError(absl::StrCat(q, " is ",
                                                   unspecified ? "the unspecified"
                                                   : multicast ? "a multicast"
                                                               : "the broadcast",
                                                   " address, not a resolver"));
  }
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof(buf));
  return v6 ? absl::StrCat("[", buf, "]:", port) : absl::StrCat(buf, ":", port);
}

}  // namespace lazaret::config
