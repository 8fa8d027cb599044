#include "services/common/service_main.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/flags.h"
#include "services/common/log.h"
#include "services/common/runtime_dir.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret {

absl::StatusOr<ServiceOptions> ParseServiceFlags(int argc, char** argv) {
  ServiceOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (ConsumeFlag(a, "--runtime-dir=")) {
      o.runtime_dir = std::string(a);
    } else if (ConsumeFlag(a, "--socket=")) {
      o.socket_path = std::string(a);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown argument '", argv[i], "' (accepted: --runtime-dir=DIR, --socket=PATH)"));
    }
  }
  return o;
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

absl::Status ServeUntilSignal(const ServiceSpec& spec, const ServiceOptions& options) {
  const std::string runtime_dir =
      options.runtime_dir.empty() ? DefaultRuntimeDir() : options.runtime_dir;
  LAZ_RETURN_IF_ERROR(EnsurePrivateDir(runtime_dir).status());
  const std::string socket_path =
      options.socket_path.empty() ? SocketPath(runtime_dir, spec.name) : options.socket_path;
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<UnixListener> listener, UnixListener::Bind(socket_path));

  LAZ_ASSIGN_OR_RETURN(caps::Report report, caps::DropToDeclared(spec.capabilities));
  LAZ_LOG_INFO << "capabilities held: {" << absl::StrJoin(caps::Names(report.held), ",") << "}"
               << (report.missing.empty()
                       ? std::string()
                       : absl::StrCat(" (declared but unavailable: {",
                                      absl::StrJoin(caps::Names(report.missing), ","), "})"));

  LAZ_ASSIGN_OR_RETURN(ServiceHandlers handlers, spec.make_handlers(runtime_dir));
  std::vector<grpc::Service*> raw;
  for (auto& s : handlers.services) raw.push_back(s.get());
  LAZ_ASSIGN_OR_RETURN(
      std::unique_ptr<GrpcUnixServer> server,
      GrpcUnixServer::Start(std::move(listener), raw, PeerPolicy{.allowed_uid = geteuid()},
                            spec.max_receive_message_bytes));
  LAZ_LOG_INFO << "serving on " << socket_path;

  const int sig = WaitForTerminationSignal();
  LAZ_LOG_INFO << "received " << strsignal(sig) << ", shutting down";
  server->Shutdown();
  if (handlers.on_shutdown) handlers.on_shutdown();
  LAZ_LOG_INFO << "stopped";
  return absl::OkStatus();
}

int ServiceMain(const ServiceSpec& spec, int argc, char** argv) {
  BlockTerminationSignals();
  log::SetProcessName(absl::StrCat("lazaret-", spec.name));
  absl::StatusOr<ServiceOptions> options = ParseServiceFlags(argc, argv);
  absl::Status status = options.ok() ? ServeUntilSignal(spec, *options) : options.status();
  if (!status.ok()) {
    LAZ_LOG_ERROR << status.message();
    return 1;
  }
  return 0;
}

}  // namespace lazaret
