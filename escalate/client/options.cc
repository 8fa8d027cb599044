#include "escalate/client/options.h"

#include <arpa/inet.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "services/wire/strict_json.h"

namespace lazaret::escalation::client {
namespace {

constexpr char kHelp[] =
    R"(Usage: lazaret-escalate [OPTIONS] -- CMD [ARGS...]
       lazaret-escalate [OPTIONS] -c 'COMMAND'

Asks the host's lazaret-brokerd to run one command on the host, outside the
sandbox. A human approves it on the host unless an auto_approve rule covers
it. The command runs with execve, never a shell: with -c the host splits
COMMAND into words by POSIX shell rules, without expanding anything.

Options:
  --justify TEXT   why the command must run on the host (shown to the human)
  --timeout S      give up after S seconds in all (default: the broker's own
                   approval and command timeouts)
  --json           print the final response as one JSON line instead of the
                   command's output, and exit 0 unless the client failed
  --endpoint A:P   where the broker is reached: an IPv4 address and a port
                   (default 127.0.0.1:7457, the session's relay)
  --certs DIR      ca.pem, client.pem, client.key (default /run/lazaret/certs)
  --cwd DIR        working directory, /workspace or below (default: the
                   current directory)
  -h, --help       this text

Exit status:
  0-255  the host command's exit status, when it ran (128+N: signal N)
  124    the host command ran past the host's timeout and was stopped
  240    the request was denied (the reason is on stderr)
  241    timed out waiting (--timeout, or no approval in time)
  242    the broker is unreachable (refused, closed before it answered,
         certificates missing)
  243    protocol error (TLS failure, bad frame, request refused as malformed)
  244    usage error
A host command can itself exit 124 or 240-244; --json tells them apart.
)";

}  // namespace

const char* HelpText() { return kHelp; }

absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args) {
  Options options;
  size_t i = 0;
  // The value of option `name`, from "--name=VALUE" or the next argument.
  const auto value = [&](absl::string_view arg, absl::string_view name,
                         std::string* out) -> absl::StatusOr<bool> {
    if (arg == name) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      }
      *out = args[++i];
      return true;
    }
    if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
      *out = std::string(arg.substr(name.size() + 1));
      return true;
    }
    return false;
  };
  bool rest_is_argv = false;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::string v;
    if (arg == "--") {
      rest_is_argv = true;
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      return options;
    }
    if (arg == "--json") {
      options.json = true;
      continue;
    }
    if (arg == "-c") {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError("-c needs a COMMAND");
      options.command = args[++i];
      ++i;
      break;
    }
    bool matched = false;
    for (auto [name, out] :
         {std::pair<absl::string_view, std::string*>{"--justify", &options.justification},
          {"--endpoint", &options.endpoint},
          {"--certs", &options.certs_dir},
          {"--cwd", &options.cwd},
          {"--timeout", &v}}) {
      absl::StatusOr<bool> got = value(arg, name, out);
      if (!got.ok()) return got.status();
      if (!*got) continue;
      matched = true;
      if (name == "--timeout") {
        int seconds = 0;
        if (!absl::SimpleAtoi(v, &seconds) || seconds < 1 || seconds > kMaxTimeoutSeconds) {
          return absl::InvalidArgumentError(
              absl::StrCat("--timeout wants whole seconds from 1 to ", kMaxTimeoutSeconds));
        }
        options.timeout_seconds = seconds;
      }
      break;
    }
    if (matched) continue;
    if (!arg.empty() && arg[0] == '-') {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", QuoteForError(arg)));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("put -- before the command ", QuoteForError(arg), ", or give it with -c"));
  }
  if (rest_is_argv) {
    options.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    if (options.argv.empty()) return absl::InvalidArgumentError("no command after --");
    if (options.argv[0].empty()) return absl::InvalidArgumentError("the command name is empty");
  } else if (options.command.has_value()) {
    if (i < args.size()) {
      return absl::InvalidArgumentError("-c takes one COMMAND; quote it as one argument");
    }
    if (options.command->empty()) return absl::InvalidArgumentError("-c COMMAND is empty");
  } else {
    return absl::InvalidArgumentError("no command: give -- CMD ARGS... or -c 'COMMAND'");
  }
  if (!options.cwd.empty() && options.cwd[0] != '/') {
    return absl::InvalidArgumentError("--cwd must be an absolute path");
  }
  if (absl::StatusOr<Endpoint> e = ParseEndpoint(options.endpoint); !e.ok()) return e.status();
  return options;
}

absl::StatusOr<Endpoint> ParseEndpoint(const std::string& text) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "--endpoint wants IPV4:PORT (like ", kDefaultEndpoint, "), not ", QuoteForError(text)));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad();
  Endpoint e;
  e.address = text.substr(0, colon);
  in_addr unused{};
  if (e.address.size() > 15 || inet_pton(AF_INET, e.address.c_str(), &unused) != 1) return bad();
  const std::string port = text.substr(colon + 1);
  uint32_t p = 0;
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != port.npos ||
      !absl::SimpleAtoi(port, &p) || p == 0 || p > 65535) {
    return bad();
  }
  e.port = static_cast<uint16_t>(p);
  return e;
}

}  // namespace lazaret::escalation::client
