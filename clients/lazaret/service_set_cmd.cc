// `lazaret up`, `down` and `status`: start, stop and inspect the supervisor
// that runs the service set for this user (clients/lazaret/serviceset/).
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/lazaret/cli.h"
#include "clients/lazaret/commands.h"
#include "clients/lazaret/help/help.h"
#include "clients/lazaret/serviceset/launch.h"
#include "clients/lazaret/serviceset/shutdown.h"
#include "clients/lazaret/serviceset/status.h"
#include "services/common/constants.h"
#include "services/common/runtime_dir.h"

namespace lazaret::cli {

namespace ss = serviceset;
using std::chrono::milliseconds;

int CmdUp(const Context& ctx, const std::vector<std::string>& args) {
  bool foreground = false;
  for (const auto& a : args) {
    if (a == "--foreground") {
      foreground = true;
    } else {
      std::fprintf(stderr, "lazaret up: unknown argument '%s'\n%s", a.c_str(), help::kUpUsage);
      return 2;
    }
  }
  if (auto dir = EnsurePrivateDir(ctx.runtime_dir); !dir.ok()) {
    std::fprintf(stderr, "lazaret up: %s\n", std::string(dir.status().message()).c_str());
    return 1;
  }
  if (auto st = ss::QueryStatus(ctx.runtime_dir, milliseconds(1000)); st.ok()) {
    std::printf("Lazaret is already up; not starting a second service set.\n");
    ss::PrintStatusTable(*st);
    return 0;
  }
  absl::StatusOr<ss::SupervisorCommand> command =
      ss::SupervisorCommandFor(ctx.runtime_dir, ctx.libexec_dir);
  if (!command.ok()) {
    std::fprintf(stderr, "lazaret up: %s\n", std::string(command.status().message()).c_str());
    return 1;
  }
  if (foreground) {
    const absl::Status s = ss::ExecInForeground(*command);
    std::fprintf(stderr, "lazaret up: %s\n", std::string(s.message()).c_str());
    return 1;
  }

  const std::string log_path = ss::SupervisorLogPath(ctx.runtime_dir);
  absl::StatusOr<pid_t> pid = ss::StartDetached(*command, log_path);
  if (!pid.ok()) {
    std::fprintf(stderr, "lazaret up: %s\n", std::string(pid.status().message()).c_str());
    return 1;
  }
  const ss::UpResult up = ss::WaitUntilUp(ctx.runtime_dir, *pid);
  switch (up.outcome) {
    case ss::UpResult::Outcome::kHealthy:
      ss::PrintStatusTable(*up.status);
      return 0;
    case ss::UpResult::Outcome::kLostRace:
      // Another `lazaret up` won the race; that set is the one that runs.
      std::printf("Lazaret is already up; not starting a second service set.\n");
      if (up.status.ok()) ss::PrintStatusTable(*up.status);
      return 0;
    case ss::UpResult::Outcome::kExited:
      std::fprintf(stderr, "lazaret up: the supervisor exited during startup. Its log (%s):\n%s\n",
                   log_path.c_str(), ss::TailOfFile(log_path, 20).c_str());
      return 1;
    case ss::UpResult::Outcome::kTimedOut:
      break;
  }
  std::fprintf(stderr, "lazaret up: not every service became healthy within %lld s.\n",
               static_cast<long long>(ss::kUpTimeout.count()));
  if (up.status.ok()) ss::PrintStatusTable(*up.status);
  std::fprintf(stderr, "Supervisor log (%s):\n%s\n", log_path.c_str(),
               ss::TailOfFile(log_path, 20).c_str());
  return 1;
}

int CmdDown(const Context& ctx, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "lazaret down: unexpected argument '%s'\n%s", args[0].c_str(),
                 help::kDownUsage);
    return 2;
  }
  if (absl::Status s = ss::RequestShutdown(ctx.runtime_dir); !s.ok()) {
    if (!ss::SupervisorLockHeld(ctx.runtime_dir)) {
      std::printf("Lazaret is not running.\n");
      return 0;
    }
    std::fprintf(stderr,
                 "lazaret down: the supervisor holds its lock but does not answer on %s "
                 "(%s); see %s/%s\n",
                 ss::SupervisorSocket(ctx.runtime_dir).c_str(), std::string(s.message()).c_str(),
                 ctx.runtime_dir.c_str(), kSupervisorLogFile);
    return 1;
  }
  if (!ss::WaitUntilStopped(ctx.runtime_dir)) {
    std::fprintf(stderr, "lazaret down: the supervisor is still stopping after %lld s\n",
                 static_cast<long long>(ss::kDownTimeout.count()));
    return 1;
  }
  std::printf("Lazaret is down.\n");
  return 0;
}

int CmdStatus(const Context& ctx, const std::vector<std::string>& args) {
  bool json = false;
  if (std::optional<int> exit_code =
          ParseJsonFlag("status", args, help::kStatusHelp, help::kStatusUsage, &json)) {
    return *exit_code;
  }
  absl::StatusOr<supervisor::v1::GetStatusResponse> st =
      ss::QueryStatus(ctx.runtime_dir, milliseconds(2000));
  if (!st.ok()) {
    if (json) {
      std::printf("{\"running\":false}\n");
    } else {
      std::printf("Lazaret is not running (no supervisor on %s). Start it with: lazaret up\n",
                  ss::SupervisorSocket(ctx.runtime_dir).c_str());
    }
    return 3;
  }
  if (json) {
    absl::StatusOr<std::string> out = ss::StatusJson(*st);
    if (!out.ok()) return 1;
    std::printf("%s\n", out->c_str());
  } else {
    ss::PrintStatusTable(*st);
  }
  return st->all_healthy() ? 0 : 1;
}

}  // namespace lazaret::cli
