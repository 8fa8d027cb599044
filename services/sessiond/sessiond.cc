#include "services/sessiond/sessiond.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "services/common/flags.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/session_id.h"
#include "services/common/status_util.h"
#include "services/sessiond/session/podman.h"
#include "services/sessiond/session/reap.h"
#include "services/sessiond/session_service.h"
#include "services/sessiond/worker_table.h"

namespace lazaret::sessiond {
namespace {

// The largest request: a StartRequest with room for gRPC's framing.
constexpr int kMaxReceiveMessageBytes = 1 << 20;

absl::StatusOr<std::string> SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ErrnoStatus("readlink /proc/self/exe", errno);
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

absl::StatusOr<Invocation> ParseFlags(int argc, char** argv) {
  Invocation inv;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (ConsumeFlag(a, "--runtime-dir=")) {
      inv.options.service.runtime_dir = std::string(a);
    } else if (ConsumeFlag(a, "--socket=")) {
      inv.options.service.socket_path = std::string(a);
    } else if (ConsumeFlag(a, "--libexec-dir=")) {
      inv.options.libexec_dir = std::string(a);
    } else if (a == "--session-worker") {
      inv.mode = Invocation::Mode::kSessionWorker;
    } else if (ConsumeFlag(a, "--reap-session=")) {
      if (!IsValidSessionId(a)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--reap-session: '", std::string(a), "' is not a session id"));
      }
      inv.mode = Invocation::Mode::kReap;
      inv.reap_session = std::string(a);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown argument '", argv[i],
                       "' (accepted: --runtime-dir=DIR, --socket=PATH, --libexec-dir=DIR, "
                       "--session-worker, --reap-session=ID)"));
    }
  }
  for (const std::string* dir : {&inv.options.service.runtime_dir, &inv.options.libexec_dir}) {
    if (!dir->empty() && (*dir)[0] != '/') {
      return absl::InvalidArgumentError(absl::StrCat("'", *dir, "' is not an absolute path"));
    }
  }
  if (inv.options.service.runtime_dir.empty())
    inv.options.service.runtime_dir = DefaultRuntimeDir();
  LAZ_ASSIGN_OR_RETURN(inv.options.program, SelfExe());
  if (inv.options.libexec_dir.empty()) {
    const char* env = std::getenv("LAZARET_LIBEXEC_DIR");
    inv.options.libexec_dir = env != nullptr && env[0] == '/'
                                  ? std::string(env)
                                  : inv.options.program.substr(0, inv.options.program.rfind('/'));
  }
  return inv;
}

ServiceSpec Spec(const Options& options) {
  return ServiceSpec{
      .name = kSessiondService.name,
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()},
                       .delegated = {},
                       .granted_by_exec =
                           std::vector<cap_value_t>(kGrantedByExec.begin(), kGrantedByExec.end())},
      .make_handlers =
          [options](const std::string& runtime_dir) -> absl::StatusOr<ServiceHandlers> {
        LAZ_ASSIGN_OR_RETURN(
            std::unique_ptr<WorkerTable> table,
            WorkerTable::Create(WorkerCommand{.program = options.program,
                                              .runtime_dir = runtime_dir,
                                              .libexec_dir = options.libexec_dir}));
        std::shared_ptr<WorkerTable> workers = std::move(table);
        ServiceHandlers h;
        h.services.push_back(
            std::make_unique<SessionServiceImpl>(workers, runtime_dir, options.program));
        // Every worker ends its session cleanly (as on `lazaret stop`).
        h.on_shutdown = [workers] { workers->Shutdown(); };
        return h;
      },
      .max_receive_message_bytes = kMaxReceiveMessageBytes,
  };
}

absl::Status Run(const Options& options) {
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(options.service.runtime_dir).status());
  // setenv(CONTAINERS_CONF): before any thread, inherited by every worker
  // and reap and by every podman they run.
  LAZ_RETURN_IF_ERROR(cli::session::InstallContainersConf(options.service.runtime_dir).status());
  return ServeUntilSignal(Spec(options), options.service);
}

int RunReap(const std::string& runtime_dir, const std::string& id) {
  auto print = [](const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  };
  absl::StatusOr<cli::session::CleanOutcome> outcome =
      cli::session::CleanDeadSession(runtime_dir, id, print);
  if (!outcome.ok()) {
    print(std::string(outcome.status().message()));
    return kReapExitError;
  }
  switch (*outcome) {
    case cli::session::CleanOutcome::kReaped:
      return kReapExitReaped;
    case cli::session::CleanOutcome::kReapFailed:
      return kReapExitLeftSomething;
    case cli::session::CleanOutcome::kNothingLeft:
      return kReapExitNothingLeft;
    case cli::session::CleanOutcome::kOwnerAlive:
      return kReapExitOwnerAlive;
  }
  return kReapExitError;
}

}  // namespace lazaret::sessiond
