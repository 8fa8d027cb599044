// `lazaret attach [--watch] [SESSION]`: this terminal attached to a
// running session (docs/operations.md), from any terminal of the user who
// started it. Runs in the user's terminal, as the user: finds the session
// through lazaret-sessiond's List and hands the terminal to the attach
// client (attach/attach_client.h), which replays what the session shows.
#include <cstdio>
#include <string>
#include <vector>

#include "clients/lazaret/attach/attach_client.h"
#include "clients/lazaret/attach/sessiond_client.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/help/help.h"

namespace lazaret::cli {

int CmdAttach(const Context& ctx, const std::vector<std::string>& args) {
  // Before any thread exists (gRPC creates some on the first call).
  attach::BlockAttachSignals();
  bool watch = false;
  std::string which;
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::printf("%s", help::kAttachUsage);
      return 0;
    }
    if (a == "--watch") {
      watch = true;
    } else if (!a.empty() && a[0] != '-' && which.empty()) {
      which = a;
    } else {
      std::fprintf(stderr, "lazaret attach: unexpected argument '%s'\n%s", a.c_str(),
                   help::kAttachUsage);
      return 2;
    }
  }
  attach::SessiondClient client(attach::SessiondSocket(ctx.runtime_dir));
  absl::StatusOr<std::vector<::lazaret::session::v1::SessionInfo>> all = client.List();
  if (!all.ok()) {
    std::fprintf(stderr, "lazaret attach: %s\n", std::string(all.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<::lazaret::session::v1::SessionInfo> s = attach::ChooseSession(*all, which);
  if (!s.ok()) {
    std::fprintf(stderr, "lazaret attach: %s\n", std::string(s.status().message()).c_str());
    return 1;
  }
  attach::AttachOptions o;
  o.program = "lazaret attach";
  o.session_id = s->id();
  o.attach_socket = s->attach_socket();
  o.runtime_dir = ctx.runtime_dir;
  o.tty_session = s->tty();
  o.take_input = !watch;
  o.replay = true;
  return attach::RunAttached(o);
}

}  // namespace lazaret::cli
