#include "clients/lazaret/serviceset/shutdown.h"

#include <unistd.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/serviceset/status.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/constants.h"
#include "services/common/fs/lock.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::serviceset {

namespace pb = ::lazaret::supervisor::v1;
using Clock = std::chrono::steady_clock;

absl::Status RequestShutdown(const std::string& runtime_dir) {
  // The channel closes at the end of this function, so the supervisor's
  // server is not left waiting on our idle connection while it stops.
  auto stub = pb::SupervisorService::NewStub(DialUnix(SupervisorSocket(runtime_dir)));
  grpc::ClientContext cc;
  cc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  pb::ShutdownResponse resp;
  return FromGrpcStatus(stub->Shutdown(&cc, pb::ShutdownRequest(), &resp));
}

bool SupervisorLockHeld(const std::string& runtime_dir) {
  return fs::IsLockHeld(absl::StrCat(runtime_dir, "/", kSupervisorLockFile));
}

bool WaitUntilStopped(const std::string& runtime_dir, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (SupervisorLockHeld(runtime_dir)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace lazaret::cli::serviceset
