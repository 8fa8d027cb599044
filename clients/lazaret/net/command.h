// Running one parsed `lazaret net` command (args.h) against
// lazaret-netpolicyd for one session, printing through two sinks so that
// the front-end (clients/lazaret/net_cmd.cc) writes to the terminal and
// the tests capture every line. Runs in the `lazaret` CLI, as the user;
// what netpolicyd answers is printed through format.h, escaped.
#ifndef LAZARET_CLIENTS_LAZARET_NET_COMMAND_H_
#define LAZARET_CLIENTS_LAZARET_NET_COMMAND_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "lazaret/egress/v1/egress.pb.h"
#include "clients/lazaret/net/args.h"
#include "clients/lazaret/net/netpolicy_client.h"

namespace lazaret::cli::net {

// Exit codes. `lazaret net test` exits kExitOk when allowed, kExitFailed
// when denied and kExitUsage on any error, so a script can branch on it.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

struct NetOutput {
  // Each call is one piece of text, newlines included; the front-end
  // flushes after each (`log --follow` prints as entries arrive).
  std::function<void(absl::string_view)> out;
  std::function<void(absl::string_view)> err;
  std::function<int64_t()> now_unix;  // the clock expiries are shown against
  // `log --requests`: the egress proxy's request log of a session, each
  // record to the callback (false stops), with follow until it ends.
  std::function<absl::Status(
      const std::string& session, bool follow,
      const std::function<bool(const ::lazaret::egress::v1::RequestRecord&)>& each)>
      watch_requests;
};

// Runs `args` (verb other than kHelp) for `session`, a full session id.
// Errors are printed as "lazaret net VERB: ..." on `err`.
int RunNetCommand(const NetArgs& args, const std::string& session, NetPolicyClient& client,
                  const NetOutput& output);

// The first line of `lazaret net log` (on stderr): what the log cannot show.
extern const char kEgressLogNotice[];

}  // namespace lazaret::cli::net

#endif  // LAZARET_CLIENTS_LAZARET_NET_COMMAND_H_
