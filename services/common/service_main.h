// The startup sequence every Lazaret service follows, in one place:
//   block termination signals (before any thread exists)
//   -> make sure the runtime directory is private
//   -> bind the socket
//   -> drop to the declared capabilities, set no_new_privs, verify
//   -> only then construct the handlers that read untrusted input
//   -> serve until SIGINT/SIGTERM, then shut down and remove the socket.
#ifndef LAZARET_SERVICES_COMMON_SERVICE_MAIN_H_
#define LAZARET_SERVICES_COMMON_SERVICE_MAIN_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/common/capabilities.h"
#include "services/common/unix_server.h"

namespace lazaret {

// Common flags of every service binary.
struct ServiceOptions {
  std::string runtime_dir;  // empty: DefaultRuntimeDir()
  std::string socket_path;  // empty: the service's socket in the catalog (service_catalog.h)
};

// Parses --runtime-dir=DIR and --socket=PATH; anything else is an error that
// names the flag. argv[0] is skipped.
absl::StatusOr<ServiceOptions> ParseServiceFlags(int argc, char** argv);

// The handlers of one service, created after the capability drop.
struct ServiceHandlers {
  std::vector<std::unique_ptr<grpc::Service>> services;
  // Optional: called once after shutdown, before the socket is removed.
  std::function<void()> on_shutdown;
};

struct ServiceSpec {
  // "configd": its entry in the service catalog (service_catalog.h) names
  // its socket; log prefix "lazaret-<name>".
  std::string name;
  caps::Declaration capabilities;
  // Builds the handlers. Runs after the drop, with the resolved runtime dir.
  std::function<absl::StatusOr<ServiceHandlers>(const std::string& runtime_dir)> make_handlers;
  // The largest request the server accepts.
  int max_receive_message_bytes = kDefaultMaxReceiveMessageBytes;
};

// The spec of a service whose handler is one default-constructed gRPC
// service `Impl` that needs nothing at construction.
template <typename Impl, size_t N>
ServiceSpec SingleServiceSpec(std::string name, const std::array<cap_value_t, N>& capabilities) {
  return ServiceSpec{
      .name = std::move(name),
      .capabilities = {.required = {capabilities.begin(), capabilities.end()}, .delegated = {}},
      .make_handlers = [](const std::string&) -> absl::StatusOr<ServiceHandlers> {
        ServiceHandlers h;
        h.services.push_back(std::make_unique<Impl>());
        return h;
      },
  };
}

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread so that every
// thread created later inherits the mask and WaitForTerminationSignal() can
// take them synchronously. Ignores SIGPIPE. Call first thing in main().
void BlockTerminationSignals();

// Returns the signal number that arrived.
int WaitForTerminationSignal();

// Runs the whole sequence above; returns when a termination signal arrived
// and the service has stopped, or on the first startup error.
absl::Status ServeUntilSignal(const ServiceSpec& spec, const ServiceOptions& options);

// The standard main(): flags, ServeUntilSignal, exit code. Prints the error
// with the service name on failure.
int ServiceMain(const ServiceSpec& spec, int argc, char** argv);

}  // namespace lazaret

#endif  // LAZARET_SERVICES_COMMON_SERVICE_MAIN_H_
