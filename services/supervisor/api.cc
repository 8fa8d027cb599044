#include "services/supervisor/api.h"

#include <unistd.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "services/common/log.h"
#include "services/common/unix_server.h"

namespace lazaret::supervisor {

namespace pb = ::lazaret::supervisor::v1;

grpc::Status SupervisorApi::GetStatus(grpc::ServerContext*, const pb::GetStatusRequest*,
                                      pb::GetStatusResponse* resp) {
  resp->set_supervisor_pid(getpid());
  resp->set_runtime_dir(runtime_dir_);
  services_->Status(resp);
  return grpc::Status::OK;
}

grpc::Status SupervisorApi::Shutdown(grpc::ServerContext*, const pb::ShutdownRequest*,
                                     pb::ShutdownResponse*) {
  LAZ_LOG_INFO << "shutdown requested over the API";
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  return grpc::Status::OK;
}

grpc::Status SupervisorApi::RegisterSession(grpc::ServerContext* ctx,
                                            const pb::RegisterSessionRequest* req,
                                            pb::RegisterSessionResponse* resp) {
  absl::StatusOr<PeerProcess> peer = PeerOfCall(*ctx);
  if (!peer.ok()) return ToGrpcStatus(peer.status());
  absl::StatusOr<pb::SessionInfo> info = registry_->Register(req->record(), *peer);
  if (!info.ok()) return ToGrpcStatus(info.status());
  *resp->mutable_session() = *std::move(info);
  return grpc::Status::OK;
}

grpc::Status SupervisorApi::AttachSessionRouter(grpc::ServerContext* ctx,
                                                const pb::AttachSessionRouterRequest* req,
                                                pb::AttachSessionRouterResponse*) {
  absl::StatusOr<PeerProcess> peer = PeerOfCall(*ctx);
  if (!peer.ok()) return ToGrpcStatus(peer.status());
  close(peer->pidfd);
  return ToGrpcStatus(registry_->Attach(req->id(), *peer));
}

grpc::Status SupervisorApi::UnregisterSession(grpc::ServerContext* ctx,
                                              const pb::UnregisterSessionRequest* req,
                                              pb::UnregisterSessionResponse*) {
  absl::StatusOr<PeerProcess> peer = PeerOfCall(*ctx);
  if (!peer.ok()) return ToGrpcStatus(peer.status());
  close(peer->pidfd);
  return ToGrpcStatus(registry_->Unregister(req->id(), *peer));
}

grpc::Status SupervisorApi::StopSession(grpc::ServerContext*, const pb::StopSessionRequest* req,
                                        pb::StopSessionResponse* resp) {
  absl::StatusOr<int> pid = registry_->Stop(req->id());
  if (!pid.ok()) return ToGrpcStatus(pid.status());
  resp->set_pid(*pid);
  return grpc::Status::OK;
}

grpc::Status SupervisorApi::GetSession(grpc::ServerContext*, const pb::GetSessionRequest* req,
                                       pb::SessionInfo* resp) {
  absl::StatusOr<pb::SessionInfo> info = registry_->Get(req->id());
  if (!info.ok()) return ToGrpcStatus(info.status());
  *resp = *std::move(info);
  return grpc::Status::OK;
}

grpc::Status SupervisorApi::ListSessions(grpc::ServerContext*, const pb::ListSessionsRequest*,
                                         pb::ListSessionsResponse* resp) {
  for (auto& s : registry_->List()) *resp->add_sessions() = std::move(s);
  return grpc::Status::OK;
}

grpc::Status SupervisorApi::WatchSessions(grpc::ServerContext* ctx, const pb::WatchSessionsRequest*,
                                          grpc::ServerWriter<pb::SessionEvent>* writer) {
  const bool ok = registry_->Watch([&](const pb::SessionEvent& e) { return writer->Write(e); },
                                   [&] { return ctx->IsCancelled(); });
  if (!ok) {
    return grpc::Status(grpc::StatusCode::ABORTED,
                        "the watcher fell behind or went away; watch again");
  }
  return grpc::Status::OK;
}

}  // namespace lazaret::supervisor
