#include <signal.h>

#include <cstdio>
#include <string_view>

#include "services/common/flags.h"
#include "services/common/log.h"
#include "services/common/service_main.h"
#include "services/supervisor/launcher.h"
#include "services/supervisor/supervisor.h"

int main(int argc, char** argv) {
  bool launcher = false;
  lazaret::supervisor::Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--launcher") {
      launcher = true;
    } else if (lazaret::ConsumeFlag(a, "--runtime-dir=")) {
      options.runtime_dir = std::string(a);
    } else if (lazaret::ConsumeFlag(a, "--libexec-dir=")) {
      options.libexec_dir = std::string(a);
    } else {
      std::fprintf(stderr,
                   "lazaret-supervisord: unknown argument '%s' (accepted: "
                   "--runtime-dir=DIR, --libexec-dir=DIR)\n",
                   argv[i]);
      return 2;
    }
  }
  if (launcher) {
    // Started by the supervisor (launcher.h); ends at EOF on its request
    // pipe or with the supervisor, so a Ctrl-C or hangup meant for `lazaret
    // up --foreground` reaches the supervisor, which ends the sessions
    // before sessiond.
    lazaret::log::SetProcessName("lazaret-launcher");
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    absl::Status status = lazaret::supervisor::RunLauncher(
        {.runtime_dir = options.runtime_dir, .libexec_dir = options.libexec_dir});
    if (!status.ok()) {
      LAZ_LOG_ERROR << status.message();
      return 1;
    }
    return 0;
  }
  lazaret::BlockTerminationSignals();
  lazaret::log::SetProcessName("lazaret-supervisord");
  absl::Status status = lazaret::supervisor::Run(options);
  if (!status.ok()) {
    LAZ_LOG_ERROR << status.message();
    return status.code() == absl::StatusCode::kAlreadyExists ? 3 : 1;
  }
  return 0;
}
