#include "services/netpolicyd/netpolicyd.h"

#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;

template <typename T>
grpc::Status Reply(absl::StatusOr<T> result, T* resp) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *resp = *std::move(result);
  return grpc::Status::OK;
}

constexpr std::chrono::milliseconds kFollowPoll{250};

}  // namespace

grpc::Status NetPolicyServiceImpl::AttachSession(grpc::ServerContext*,
                                                 const pb::AttachSessionRequest* req,
                                                 pb::PolicyApplied* resp) {
  return Reply(registry_->Attach(req->session().id()), resp);
}

grpc::Status NetPolicyServiceImpl::ReloadSession(grpc::ServerContext*,
                                                 const pb::ReloadSessionRequest* req,
                                                 pb::PolicyApplied* resp) {
  return Reply(registry_->Reload(req->session().id()), resp);
}

grpc::Status NetPolicyServiceImpl::ChangeSession(grpc::ServerContext*,
                                                 const pb::ChangeSessionRequest* req,
                                                 pb::PolicyApplied* resp) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  return Reply((*session)->Change(*req), resp);
}

grpc::Status NetPolicyServiceImpl::DetachSession(grpc::ServerContext*,
                                                 const pb::DetachSessionRequest* req,
                                                 pb::DetachSessionResponse*) {
  return ToGrpcStatus(registry_->Detach(req->session().id()));
}

grpc::Status NetPolicyServiceImpl::ListSessions(grpc::ServerContext*,
                                                const pb::ListSessionsRequest*,
                                                pb::ListSessionsResponse* resp) {
  for (const auto& session : registry_->List()) *resp->add_sessions() = session->Summary();
  return grpc::Status::OK;
}

grpc::Status NetPolicyServiceImpl::ShowPolicy(grpc::ServerContext*,
                                              const pb::ShowPolicyRequest* req,
                                              pb::SessionPolicy* resp) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  return Reply((*session)->Show(), resp);
}

grpc::Status NetPolicyServiceImpl::TestDestination(grpc::ServerContext*,
                                                   const pb::TestDestinationRequest* req,
                                                   pb::TestDestinationResponse* resp) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  return Reply((*session)->Test(*req), resp);
}

grpc::Status NetPolicyServiceImpl::WatchLog(grpc::ServerContext* ctx,
                                            const pb::WatchLogRequest* req,
                                            grpc::ServerWriter<pb::LogEntry>* writer) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_->Find(req->session().id());
  if (!session.ok()) return ToGrpcStatus(session.status());
  LogRing& log = (*session)->log();
  uint64_t next = 0;
  while (true) {
    for (const auto& entry : log.Read(&next, std::chrono::milliseconds(0))) {
      if (!writer->Write(entry)) return grpc::Status::OK;
    }
    if (!req->follow()) return grpc::Status::OK;
    while (!ctx->IsCancelled() && !log.closed()) {
      std::vector<pb::LogEntry> entries = log.Read(&next, kFollowPoll);
      bool written = true;
      for (const auto& entry : entries) written = written && writer->Write(entry);
      if (!written) return grpc::Status::OK;
    }
    return grpc::Status::OK;
  }
}

ServiceSpec SpecWith(RegistryOptions options) {
  return ServiceSpec{
      .name = "netpolicyd",
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()}, .delegated = {}},
      .make_handlers =
          [options](const std::string& runtime_dir) -> absl::StatusOr<ServiceHandlers> {
        auto registry = std::make_shared<Registry>(runtime_dir, options);
        registry->Start();
        ServiceHandlers h;
        h.services.push_back(std::make_unique<NetPolicyServiceImpl>(registry));
        h.on_shutdown = [registry] { registry->Stop(); };
        return h;
      },
  };
}

ServiceSpec Spec() { return SpecWith(RegistryOptions()); }

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::netpolicyd
