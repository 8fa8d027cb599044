// lazaret-escalate: asks the host's lazaret-brokerd to run one command.
// Runs inside the sandbox, unprivileged, statically linked.
#include <openssl/ssl.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "escalate/client/client.h"
#include "escalate/client/exit_codes.h"
#include "escalate/client/options.h"

int main(int argc, char** argv) {
  namespace client = lazaret::escalation::client;
  signal(SIGPIPE, SIG_IGN);
  // No openssl.cnf: the image's configuration must not load providers or
  // change the protocol settings of a static binary.
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  auto options = client::ParseOptions(args);
  if (!options.ok()) {
    std::fprintf(stderr, "lazaret-escalate: %s\nTry lazaret-escalate --help.\n",
                 std::string(options.status().message()).c_str());
    return client::kExitUsage;
  }
  if (options->help) {
    std::fputs(client::HelpText(), stdout);
    return 0;
  }
  return client::Run(*options);
}
