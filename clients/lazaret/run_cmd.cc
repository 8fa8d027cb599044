// `lazaret run [OPTIONS] [PROFILE] [--] [CMD...]`: one agent session in a
// gVisor sandbox on the current directory (docs/operations.md,
// docs/architecture.md). Runs in the user's terminal, as the user; parses
// the arguments and hands the session to lazaret_session
// (services/sessiond/session/runner.h), which prints its own progress.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/lazaret/commands.h"
#include "services/sessiond/session/run_args.h"
#include "services/sessiond/session/runner.h"
#include "services/sessiond/session/signals.h"
#include "services/common/status_util.h"

namespace lazaret::cli {
namespace {

absl::StatusOr<std::string> CanonicalCwd() {
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof(buf)) == nullptr) return ErrnoStatus("getcwd", errno);
  char resolved[PATH_MAX];
  if (realpath(buf, resolved) == nullptr) return ErrnoStatus("realpath of the cwd", errno);
  return std::string(resolved);
}

}  // namespace

int CmdRun(const Context& ctx, const std::vector<std::string>& args) {
  // Before any thread exists (gRPC creates some on the first call).
  session::BlockSessionSignals();

  absl::StatusOr<std::string> cwd = CanonicalCwd();
  if (!cwd.ok()) {
    std::fprintf(stderr, "lazaret run: %s\n", std::string(cwd.status().message()).c_str());
    return session::kRunFailed;
  }
  absl::StatusOr<session::RunArgs> parsed = session::ParseRunArgs(args, *cwd);
  if (!parsed.ok()) {
    std::fprintf(stderr, "lazaret run: %s\n%s", std::string(parsed.status().message()).c_str(),
                 session::kRunUsage);
    return session::kRunFailed;
  }
  if (parsed->help) {
    std::printf("%s", session::kRunUsage);
    return 0;
  }
  // --config FILE by its canonical path: what configd resolves now is what
  // lazaret-netpolicyd resolves again from the session record. A file that
  // cannot be resolved is left as given for configd to report.
  if (char resolved[PATH_MAX]; !parsed->explicit_config.empty() &&
                               realpath(parsed->explicit_config.c_str(), resolved) != nullptr) {
    parsed->explicit_config = resolved;
  }
  session::SessionOptions options;
  options.runtime_dir = ctx.runtime_dir;
  options.libexec_dir = ctx.libexec_dir;
  options.workspace_dir = *std::move(cwd);
  options.args = *std::move(parsed);
  return session::RunSession(options);
}

}  // namespace lazaret::cli
