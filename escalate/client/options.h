// lazaret-escalate's command line (inside the sandbox, unprivileged). The
// arguments come from the agent; they are checked here only for form, the
// broker judges them.
#ifndef LAZARET_ESCALATE_CLIENT_OPTIONS_H_
#define LAZARET_ESCALATE_CLIENT_OPTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::escalation::client {

inline constexpr char kDefaultSocket[] = "/run/lazaret/escalate.sock";
inline constexpr char kDefaultCerts[] = "/run/lazaret/certs";
inline constexpr int kMaxTimeoutSeconds = 7 * 24 * 3600;

struct Options {
  bool help = false;
  std::string justification;
  // The longest the whole exchange may take; none: the broker's own
  // approval and command timeouts bound it.
  std::optional<int> timeout_seconds;
  bool json = false;
  std::string socket_path = kDefaultSocket;
  std::string certs_dir = kDefaultCerts;
  // Empty: getcwd() at run time.
  std::string cwd;
  // Exactly one of them is set (unless help).
  std::optional<std::string> command;
  std::vector<std::string> argv;
};

// `args` excludes the program name. InvalidArgument says what is wrong.
absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args);

// The --help text, exit codes included.
const char* HelpText();

}  // namespace lazaret::escalation::client

#endif  // LAZARET_ESCALATE_CLIENT_OPTIONS_H_
