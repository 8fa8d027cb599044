#include "services/sessiond/session/stop.h"

#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "services/sessiond/session/registry_client.h"
#include "services/sessiond/session/session_dir.h"

namespace lazaret::cli::session {

absl::Status StopLiveSession(const std::string& runtime_dir, const SessionView& v) {
  absl::StatusOr<int> pid = StopRegisteredSession(runtime_dir, v.id);
  if (!pid.ok()) {
    return absl::Status(pid.status().code(),
                        absl::StrCat("session ", v.id, ": ", pid.status().message()));
  }
  const auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
  while (SessionOwnerAlive(v.dir->path)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("session ", v.id, " is still stopping after ",
                                                      static_cast<long long>(kStopTimeout.count()),
                                                      " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::OkStatus();
}

}  // namespace lazaret::cli::session
