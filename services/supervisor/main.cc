#include <signal.h>

#include <cstdio>
#include <string_view>

#include "services/common/flags.h"
#include "services/common/log.h"
#include "services/common/service_main.h"
#include "services/supervisor/reaper.h"
#include "services/supervisor/supervisor.h"

int main(int argc, char** argv) {
  bool reaper = false;
  lazaret::supervisor::Options options;
  lazaret::supervisor::ReaperOptions reaper_options;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--reaper") {
      reaper = true;
    } else if (lazaret::ConsumeFlag(a, "--runtime-dir=")) {
      options.runtime_dir = std::string(a);
    } else if (lazaret::ConsumeFlag(a, "--libexec-dir=")) {
      options.libexec_dir = std::string(a);
    } else if (lazaret::ConsumeFlag(a, "--cli=")) {
      reaper_options.cli = std::string(a);
    } else {
      std::fprintf(stderr,
                   "lazaret-supervisord: unknown argument '%s' (accepted: "
                   "--runtime-dir=DIR, --libexec-dir=DIR)\n",
                   argv[i]);
      return 2;
    }
  }
  if (reaper) {
    // Started by the supervisor (reaper.h); ends at EOF on its request
    // pipe, so a Ctrl-C meant for `lazaret up --foreground` does not cut a
    // reap short.
    lazaret::log::SetProcessName("lazaret-reaper");
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    reaper_options.runtime_dir = options.runtime_dir;
    absl::Status status = lazaret::supervisor::RunReaper(reaper_options);
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
