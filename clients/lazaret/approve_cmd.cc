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
#include "clients/lazaret/help/help.h"

namespace lazaret::cli {
int CmdApprove(const Context& ctx, const std::vector<std::string>& args) {
  approve::TerminalOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(help::kApproveHelp, stdout);
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
                 help::kApproveUsage);
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
