#include "clients/lazaret/net/args.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/vocab/cidr.h"
#include "services/vocab/domain_pattern.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::net {

const char kNetUsage[] =
    "usage: lazaret net show [SESSION] [--json]\n"
    "       lazaret net test SESSION HOST:PORT [--udp]\n"
    "       lazaret net log SESSION [--requests] [--follow] [--json]\n"
    "       lazaret net reload SESSION\n"
    "       lazaret net allow|deny SESSION CIDR|NAME [--for DURATION]\n";

const char kNetHelp[] =
    "usage: lazaret net show [SESSION] [--json]\n"
    "       lazaret net test SESSION HOST:PORT [--udp]\n"
    "       lazaret net log SESSION [--requests] [--follow] [--json]\n"
    "       lazaret net reload SESSION\n"
    "       lazaret net allow|deny SESSION CIDR|NAME [--for DURATION]\n"
    "\n"
    "  show    the session's effective egress policy: every rule with its source,\n"
    "          the names, the applied generation and the routes the router has\n"
    "          (without SESSION: the only live session; --json: SessionPolicy as JSON)\n"
    "  test    allowed or denied, and by which rule, for each address of HOST\n"
    "          (HOST:PORT, [IPv6]:PORT or NAME:PORT), with the kernel's own answer;\n"
    "          exit 0 allowed, 1 denied, 2 error\n"
    "  log     the session's egress log: every DNS question and its decision, every\n"
    "          connect() allowed or refused with the rule that decided it (as the\n"
    "          sandbox's gVisor kernel reported it), policy and host-network changes;\n"
    "          kept after the session ends (--follow: keep printing; --json: one\n"
    "          LogEntry JSON mapping per line). Datagrams sent without connect() are\n"
    "          not logged (DNS is). --requests: the egress proxy's request log\n"
    "          instead (a profile with secrets or HTTP rules): every request to an\n"
    "          intercepted host - time, protocol, method, host and path, status,\n"
    "          bytes, duration, the secrets injected (by name) and the rule that\n"
    "          decided; --json: one RequestRecord JSON mapping per line\n"
    "  reload  resolve the session's configuration again and apply it (after you\n"
    "          edited it); live changes that have not expired are kept\n"
    "  allow, deny\n"
    "          change the live session: a CIDR (10.1.2.0/24, fd00:1::/64) or a name\n"
    "          (api.example.com, *.example.com), for the rest of the session or\n"
    "          --for DURATION (30s, 10m, 2h; at most 168h)\n"
    "\n"
    "SESSION is a session id or a unique prefix of one (lazaret ps).\n";

namespace {

std::string Shown(absl::string_view s) {
  return absl::StrCat("'", vocab::EscapeForTerminal(s.substr(0, 300)), "'");
}

absl::StatusOr<uint32_t> ParsePort(absl::string_view text, absl::string_view whole) {
  uint32_t port = 0;
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(),
                   [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }) ||
      !absl::SimpleAtoi(text, &port) || port == 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("the port of ", Shown(whole), " is not a number from 1 to 65535"));
  }
  return port;
}

bool IsAddress(int family, absl::string_view text) {
  std::array<uint8_t, 16> buf{};
  return inet_pton(family, std::string(text).c_str(), buf.data()) == 1;
}

// A session id or a prefix of one: lowercase hex, at most 12 digits.
absl::Status CheckSessionArg(absl::string_view s) {
  if (s.empty() || s.size() > 12 || !std::all_of(s.begin(), s.end(), [](char c) {
        return absl::ascii_isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
      })) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(s),
                     " is not a session id (12 lowercase hex digits, or a unique prefix of one, "
                     "as lazaret ps shows)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<uint64_t> ParseDuration(absl::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(text), " is not a duration; write a number and a unit: 30s, 10m, 2h"));
  };
  if (text.size() < 2 || text.size() > 10) return bad();
  const char unit = text.back();
  const absl::string_view digits = text.substr(0, text.size() - 1);
  if (!std::all_of(digits.begin(), digits.end(),
                   [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
    return bad();
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(digits, &n)) return bad();
  uint64_t scale = 0;
  switch (unit) {
    case 's':
      scale = 1;
      break;
    case 'm':
      scale = 60;
      break;
    case 'h':
      scale = 3600;
      break;
    default:
      return bad();
  }
  if (n == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Shown(text), " is no time at all; leave --for out for the rest of the session"));
  }
  if (n > kMaxChangeSeconds / scale) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(text),
                     " is longer than a live change may last (168h); change the "
                     "configuration instead and run lazaret net reload"));
  }
  return n * scale;
}

absl::StatusOr<std::string> CanonicalName(absl::string_view text) {
  // The very rules of allow_domains, so that a live allow means what the
  // same name in the configuration would.
  absl::StatusOr<std::string> name = ::lazaret::vocab::CheckDomainPattern(text);
  if (!name.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(text), " is not a valid name: ", name.status().message()));
  }
  return name;
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  HostPort out;
  if (absl::StartsWith(text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat(Shown(text), " is not [IPv6]:PORT, as in [2001:db8::1]:443"));
    }
    const absl::string_view host = text.substr(1, close - 1);
    if (!IsAddress(AF_INET6, host)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Shown(host), " in brackets is not an IPv6 address"));
    }
    out.host = std::string(host);
    absl::StatusOr<uint32_t> port = ParsePort(text.substr(close + 2), text);
    if (!port.ok()) return port.status();
    out.port = *port;
    return out;
  }
  const size_t colons = std::count(text.begin(), text.end(), ':');
  if (colons == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Shown(text), " has no port; write HOST:PORT, as in example.com:443 or 10.1.2.3:22"));
  }
  if (colons > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(text),
                     ": an IPv6 address with a port is written in brackets, as in "
                     "[2001:db8::1]:443"));
  }
  const size_t colon = text.find(':');
  const absl::string_view host = text.substr(0, colon);
  absl::StatusOr<uint32_t> port = ParsePort(text.substr(colon + 1), text);
  if (!port.ok()) return port.status();
  out.port = *port;
  if (IsAddress(AF_INET, host)) {
    out.host = std::string(host);
    return out;
  }
  if (host.find('*') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(host), " is a pattern; test one name, as in api.example.com:443"));
  }
  absl::StatusOr<std::string> name = CanonicalName(host);
  if (!name.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name.status().message(), " (HOST is an IPv4 address, [IPv6] or a name)"));
  }
  out.host = *std::move(name);
  return out;
}

absl::StatusOr<ChangeTarget> ParseChangeTarget(absl::string_view text) {
  ChangeTarget out;
  const bool looks_like_address =
      text.find('/') != absl::string_view::npos || text.find(':') != absl::string_view::npos ||
      std::all_of(text.begin(), text.end(), [](char c) {
        return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.';
      });
  if (looks_like_address) {
    absl::StatusOr<::lazaret::vocab::Cidr> cidr = ::lazaret::vocab::Cidr::Parse(text);
    if (!cidr.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          vocab::EscapeForTerminal(cidr.status().message()),
          " (give a CIDR as in 10.1.2.0/24 or fd00:1::/64, or a name as in api.example.com)"));
    }
    out.cidr = cidr->ToString();
    return out;
  }
  absl::StatusOr<std::string> name = CanonicalName(text);
  if (!name.ok()) return name.status();
  out.name = *std::move(name);
  return out;
}

absl::StatusOr<NetArgs> ParseNetArgs(const std::vector<std::string>& args) {
  NetArgs out;
  if (args.empty()) return absl::InvalidArgumentError("which net command?");
  const std::string& verb = args[0];
  if (verb == "-h" || verb == "--help" || verb == "help") return out;
  size_t min_positional = 1;
  size_t max_positional = 1;
  if (verb == "show") {
    out.verb = NetVerb::kShow;
    min_positional = 0;
  } else if (verb == "test") {
    out.verb = NetVerb::kTest;
    min_positional = max_positional = 2;
  } else if (verb == "log") {
    out.verb = NetVerb::kLog;
  } else if (verb == "reload") {
    out.verb = NetVerb::kReload;
  } else if (verb == "allow" || verb == "deny") {
    out.verb = verb == "allow" ? NetVerb::kAllow : NetVerb::kDeny;
    min_positional = max_positional = 2;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown net command ", Shown(verb)));
  }
  const bool change = out.verb == NetVerb::kAllow || out.verb == NetVerb::kDeny;
  bool has_duration = false;
  std::vector<std::string> positional;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out.verb = NetVerb::kHelp;
      return out;
    }
    if (a == "--json" && (out.verb == NetVerb::kShow || out.verb == NetVerb::kLog)) {
      out.json = true;
    } else if (a == "--follow" && out.verb == NetVerb::kLog) {
      out.follow = true;
    } else if (a == "--requests" && out.verb == NetVerb::kLog) {
      out.requests = true;
    } else if (a == "--udp" && out.verb == NetVerb::kTest) {
      out.udp = true;
    } else if (change && (a == "--for" || absl::StartsWith(a, "--for="))) {
      std::string value;
      if (a == "--for") {
        if (i + 1 >= args.size()) return absl::InvalidArgumentError("--for needs a DURATION");
        value = args[++i];
      } else {
        value = a.substr(6);
      }
      if (has_duration) return absl::InvalidArgumentError("--for is given twice");
      has_duration = true;
      absl::StatusOr<uint64_t> d = ParseDuration(value);
      if (!d.ok()) return d.status();
      out.duration_seconds = *d;
    } else if (absl::StartsWith(a, "-") && a != "-") {
      return absl::InvalidArgumentError(
          absl::StrCat("lazaret net ", verb, " has no option ", Shown(a)));
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() < min_positional || positional.size() > max_positional) {
    return absl::InvalidArgumentError(
        absl::StrCat("lazaret net ", verb, " takes ",
                     out.verb == NetVerb::kShow   ? "at most one SESSION"
                     : out.verb == NetVerb::kTest ? "SESSION HOST:PORT"
                     : change                     ? "SESSION CIDR|NAME"
                                                  : "one SESSION",
                     positional.size() > max_positional
                         ? absl::StrCat(" (unexpected ", Shown(positional.back()), ")")
                         : ""));
  }
  if (!positional.empty()) {
    if (absl::Status s = CheckSessionArg(positional[0]); !s.ok()) return s;
    out.session = positional[0];
  }
  if (out.verb == NetVerb::kTest) {
    absl::StatusOr<HostPort> hp = ParseHostPort(positional[1]);
    if (!hp.ok()) return hp.status();
    out.destination = *std::move(hp);
  }
  if (change) {
    absl::StatusOr<ChangeTarget> t = ParseChangeTarget(positional[1]);
    if (!t.ok()) return t.status();
    out.target = *std::move(t);
  }
  return out;
}

}  // namespace lazaret::cli::net
