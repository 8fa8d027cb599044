#include <cstdio>
#include <string_view>

#include "services/common/flags.h"
#include "services/common/log.h"
#include "services/common/service_main.h"
#include "services/supervisor/supervisor.h"

int main(int argc, char** argv) {
  lazaret::BlockTerminationSignals();
  lazaret::log::SetProcessName("lazaret-supervisord");
  lazaret::supervisor::Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (lazaret::ConsumeFlag(a, "--runtime-dir=")) {
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
  absl::Status status = lazaret::supervisor::Run(options);
  if (!status.ok()) {
    LAZ_LOG_ERROR << status.message();
    return status.code() == absl::StatusCode::kAlreadyExists ? 3 : 1;
  }
  return 0;
}
