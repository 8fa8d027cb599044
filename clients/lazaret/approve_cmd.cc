// `lazaret approve [--session ID]`: the terminal approver - decide the host
// commands and the network names sandboxes ask for (docs/escalation.md). Runs in the user's
// terminal, as the user, on the host only. This front-end parses the
// arguments; the approver is lazaret_approve's (clients/lazaret/approve/).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "clients/lazaret/approve/approver_client.h"
#include "clients/lazaret/approve/terminal_ui.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/escalation/broker_client.h"

namespace lazaret::cli {
namespace {

constexpr char kApproveUsage[] = "usage: lazaret approve [--session ID]\n";
constexpr char kApproveHelp[] =
    "usage: lazaret approve [--session ID]\n"
    "\n"
    "Shows the host commands sandboxes ask for and decides them: a approve\n"
    "(type the code it shows, then Enter), d deny (with a reason), e edit the\n"
    "command, Q abort the session, o the output of the last approved one,\n"
    "? every key, q quit. Names a sandbox asks for (egress = \"ask\") are\n"
    "network requests: o allow once, s for the session, p for the profile\n"
    "(shows the change to your configuration file first), each with the\n"
    "code; d deny. Requests are named by the broker's id (q12). Text\n"
    "from the sandbox is shown with its hidden characters escaped and marked;\n"
    "keys are ignored for a moment when a request comes under the cursor.\n"
    "\n"
    "  --session ID   only this session's requests (default: every session)\n"
    "\n"
    "environment: NO_COLOR (set: marks in reverse video only)\n";

}  // namespace

int CmdApprove(const Context& ctx, const std::vector<std::string>& args) {
  approve::TerminalOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(kApproveHelp, stdout);
      return 0;
    }
    if (args[i] == "--session" && i + 1 < args.size()) {
      options.session_id = args[++i];
      continue;
    }
    if (args[i].rfind("--session=", 0) == 0) {
      options.session_id = args[i].substr(10);
      continue;
    }
    std::fprintf(stderr, "lazaret approve: unexpected argument '%s'\n%s", args[i].c_str(),
                 kApproveUsage);
    return 2;
  }
  const char* no_color = std::getenv("NO_COLOR");
  options.color = no_color == nullptr || *no_color == '\0';
  if (const char* name = ttyname(STDIN_FILENO); name != nullptr) options.tty_name = name;
  approve::ApproverClient client(escalation::BrokerSocket(ctx.runtime_dir));
  if (absl::Status s = approve::RunTerminalUi(client, options); !s.ok()) {
    std::fprintf(stderr, "lazaret approve: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace lazaret::cli
