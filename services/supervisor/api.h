// The gRPC API of lazaret-supervisord on supervisor.sock: GetStatus and
// Shutdown for the service set, and the session registry (registry.h).
// Runs on the supervisor's gRPC threads (no effective capability). Callers
// are already checked to be the supervisor's own uid (the server's
// PeerPolicy); a registering one is still checked to be the process it
// claims to be (PeerOfCall), and requests are validated by the registry.
#ifndef LAZARET_SERVICES_SUPERVISOR_API_H_
#define LAZARET_SERVICES_SUPERVISOR_API_H_

#include <string>
#include <utility>

#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/supervisor/registry.h"
#include "services/supervisor/service_table.h"

namespace lazaret::supervisor {

class SupervisorApi final : public v1::SupervisorService::Service {
 public:
  // `wake_fd` (an eventfd) is written to ask the supervision loop to stop.
  SupervisorApi(std::string runtime_dir, ServiceTable* services, SessionRegistry* registry,
                int wake_fd)
      : runtime_dir_(std::move(runtime_dir)),
        services_(services),
        registry_(registry),
        wake_fd_(wake_fd) {}

  grpc::Status GetStatus(grpc::ServerContext*, const v1::GetStatusRequest*,
                         v1::GetStatusResponse* resp) override;
  grpc::Status Shutdown(grpc::ServerContext*, const v1::ShutdownRequest*,
                        v1::ShutdownResponse*) override;

  // ---- The session registry (registry.h) ----

  grpc::Status RegisterSession(grpc::ServerContext* ctx, const v1::RegisterSessionRequest* req,
                               v1::RegisterSessionResponse* resp) override;
  grpc::Status AttachSessionRouter(grpc::ServerContext* ctx,
                                   const v1::AttachSessionRouterRequest* req,
                                   v1::AttachSessionRouterResponse*) override;
  grpc::Status UnregisterSession(grpc::ServerContext* ctx, const v1::UnregisterSessionRequest* req,
                                 v1::UnregisterSessionResponse*) override;
  grpc::Status StopSession(grpc::ServerContext*, const v1::StopSessionRequest* req,
                           v1::StopSessionResponse* resp) override;
  grpc::Status GetSession(grpc::ServerContext*, const v1::GetSessionRequest* req,
                          v1::SessionInfo* resp) override;
  grpc::Status ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest*,
                            v1::ListSessionsResponse* resp) override;
  grpc::Status WatchSessions(grpc::ServerContext* ctx, const v1::WatchSessionsRequest*,
                             grpc::ServerWriter<v1::SessionEvent>* writer) override;

 private:
  const std::string runtime_dir_;
  ServiceTable* const services_;
  SessionRegistry* const registry_;
  const int wake_fd_;
};

}  // namespace lazaret::supervisor

#endif  // LAZARET_SERVICES_SUPERVISOR_API_H_
