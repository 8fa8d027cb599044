// `lazaret net show|test|log|reload|allow|deny`: a live session's egress
// policy, through lazaret-netpolicyd (docs/operations.md "Network
// commands", docs/networking.md). Runs in the user's terminal, as the user,
// on the host only - the sandbox never reaches netpolicyd's socket. This
// front-end parses the arguments, finds the session among this runtime
// directory's live sessions and prints; the checks, the calls and the
// printing are lazaret_net's (clients/lazaret/net/).
#include <time.h>

#include <cstdio>
#include <string>
#include <vector>

#include "clients/lazaret/commands.h"
#include "clients/lazaret/net/args.h"
#include "clients/lazaret/net/command.h"
#include "clients/lazaret/net/egress_client.h"
#include "clients/lazaret/net/netpolicy_client.h"
#include "services/sessiond/session/session_dir.h"

namespace lazaret::cli {
namespace {

void Write(std::FILE* f, absl::string_view s) {
  std::fwrite(s.data(), 1, s.size(), f);
  std::fflush(f);
}

}  // namespace

int CmdNet(const Context& ctx, const std::vector<std::string>& args) {
  absl::StatusOr<net::NetArgs> parsed = net::ParseNetArgs(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "lazaret net: %s\n%s(lazaret net --help says more)\n",
                 std::string(parsed.status().message()).c_str(), net::kNetUsage);
    return net::kExitUsage;
  }
  if (parsed->verb == net::NetVerb::kHelp) {
    std::fputs(net::kNetHelp, stdout);
    return net::kExitOk;
  }
  // `lazaret net test` exits 1 for "denied": every error here is 2 for it.
  const int error_exit = parsed->verb == net::NetVerb::kTest ? net::kExitUsage : net::kExitFailed;
  absl::StatusOr<std::vector<session::FoundSession>> dirs =
      session::FindSessionDirs(ctx.runtime_dir);
  if (!dirs.ok()) {
    std::fprintf(stderr, "lazaret net: %s\n", std::string(dirs.status().message()).c_str());
    return error_exit;
  }
  absl::StatusOr<std::string> id = session::ChooseLiveSession(*dirs, parsed->session);
  // An ended session's egress log is kept: a full id that is no longer
  // live is asked for as is (lazaret-netpolicyd reads its file).
  if (!id.ok() && absl::IsNotFound(id.status()) && parsed->verb == net::NetVerb::kLog &&
      session::IsValidSessionId(parsed->session)) {
    id = parsed->session;
  }
  if (!id.ok()) {
    std::fprintf(stderr, "lazaret net: %s\n", std::string(id.status().message()).c_str());
    return error_exit;
  }
  net::NetPolicyClient client(net::NetPolicySocket(ctx.runtime_dir));
  net::NetOutput output{.out = [](absl::string_view s) { Write(stdout, s); },
                        .err = [](absl::string_view s) { Write(stderr, s); },
                        .now_unix = [] { return static_cast<int64_t>(time(nullptr)); },
                        .watch_requests =
                            [&ctx](const std::string& session, bool follow, const auto& each) {
                              return net::WatchEgressRequests(ctx.runtime_dir, session, follow,
                                                              each);
                            }};
  return net::RunNetCommand(*parsed, *id, client, output);
}

}  // namespace lazaret::cli
