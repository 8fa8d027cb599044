// The command line of `lazaret run`: its arguments, their parse rule and
// the exit codes of `lazaret run` itself. Runs in the `lazaret` CLI (for
// --help and usage errors) and in the session worker (the session's
// arguments, StartRequest.args); the arguments are the developer's own,
// checked here only for form. Its own small library (lazaret_run_args):
// nothing else of the session runtime.
#ifndef LAZARET_SERVICES_SESSIOND_SESSION_RUN_ARGS_H_
#define LAZARET_SERVICES_SESSIOND_SESSION_RUN_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lazaret/common/v1/common.pb.h"

namespace lazaret::cli::session {

// Exit codes of `lazaret run` itself. Everything else is the command's own
// exit code (126/127 come from lazaret-sandbox-init when the command cannot
// be executed or found; 128+N when it died of signal N).
inline constexpr int kRunFailed = 125;  // Lazaret or podman failed; the command did not run
// When `lazaret run` itself is stopped by SIGINT, SIGTERM or SIGHUP it tears
// the session down and exits with 128+signal (130, 143, 129).

struct RunArgs {
  std::string explicit_config;  // --config FILE, made absolute
  std::string branch;           // --branch NAME
  bool worktree = false;        // --worktree
  bool dry_run = false;         // --dry-run
  // --approver inline|remote; empty: the profile's escalation.approver.
  std::string approver;
  // -p [ADDR:]HOSTPORT[:SANDBOXPORT], repeatable: inbound forwards opened
  // once the session's egress policy applies (net/port_args.h).
  std::vector<lazaret::common::v1::PortForward> ports;
  bool help = false;                 // -h / --help
  std::string profile;               // empty: the default profile
  std::vector<std::string> command;  // empty: the image's shell
};

inline constexpr char kRunUsage[] =
    "usage: lazaret run [--config FILE] [--branch NAME] [--worktree] [--dry-run]\n"
    "                   [--approver inline|remote] [-p [ADDR:]HOSTPORT[:SANDBOXPORT]]...\n"
    "                   [PROFILE] [--] [CMD...]\n"
    "  Options come first. The first other argument is the PROFILE (the default profile when\n"
    "  there is none); everything after it is the command. To run a command in the default\n"
    "  profile, put it after --:  lazaret run -- make test\n";

// The parse rule (docs/operations.md): options are recognised only before
// the first non-option argument or `--`. `--` ends the options and keeps the
// default profile: everything after it is the command. Otherwise the first
// non-option argument is the PROFILE, an optional `--` right after it is
// skipped, and the rest is the command. `cwd` makes --config absolute.
absl::StatusOr<RunArgs> ParseRunArgs(const std::vector<std::string>& args, const std::string& cwd);

}  // namespace lazaret::cli::session

#endif  // LAZARET_SERVICES_SESSIOND_SESSION_RUN_ARGS_H_
