#include "services/egressd/egressd.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "services/common/runtime_dir.h"
#include "services/common/session_id.h"
#include "services/common/session_watcher.h"
#include "services/common/unix_server.h"

namespace lazaret::egressd {
namespace {

namespace epb = ::lazaret::egress::v1;

constexpr std::chrono::milliseconds kFollowPoll{250};

}  // namespace

grpc::Status EgressServiceImpl::AttachSession(grpc::ServerContext*,
                                              const epb::AttachSessionRequest* req,
                                              epb::AttachSessionResponse* resp) {
  if (!IsValidSessionId(req->session_id())) {
    return ToGrpcStatus(absl::InvalidArgumentError("session_id is not a session id"));
  }
  absl::StatusOr<std::shared_ptr<ProxySession>> s = sessions_->Attach(*req);
  if (!s.ok()) return ToGrpcStatus(s.status());
  resp->set_ca_pem((*s)->ca_pem());
  for (const std::string& h : (*s)->hosts()) resp->add_hosts(h);
  return grpc::Status::OK;
}

grpc::Status EgressServiceImpl::DetachSession(grpc::ServerContext*,
                                              const epb::DetachSessionRequest* req,
                                              epb::DetachSessionResponse*) {
  return ToGrpcStatus(sessions_->Detach(req->session_id()));
}

grpc::Status EgressServiceImpl::ListSessions(grpc::ServerContext*, const epb::ListSessionsRequest*,
                                             epb::ListSessionsResponse* resp) {
  for (const auto& s : sessions_->List()) *resp->add_sessions() = s->Summary();
  return grpc::Status::OK;
}

grpc::Status EgressServiceImpl::WatchRequests(grpc::ServerContext* ctx,
                                              const epb::WatchRequestsRequest* req,
                                              grpc::ServerWriter<epb::RequestRecord>* writer) {
  absl::StatusOr<std::shared_ptr<ProxySession>> s = sessions_->Find(req->session_id());
  if (!s.ok()) {
    // An ended session: its file (the id is checked, the path derived from
    // it); `follow` ends at the end of the file, as nothing will be added.
    if (!absl::IsNotFound(s.status()) || sessions_->log_dir().empty() ||
        !IsValidSessionId(req->session_id())) {
      return ToGrpcStatus(s.status());
    }
    absl::StatusOr<std::vector<epb::RequestRecord>> records =
        ReadRequestLogFile(sessions_->log_dir(), req->session_id());
    if (!records.ok()) return ToGrpcStatus(records.status());
    for (const auto& r : *records) {
      if (!writer->Write(r)) break;
    }
    return grpc::Status::OK;
  }
  RequestLog& log = (*s)->log();
  uint64_t next = 0;
  for (const auto& r : log.Read(&next, std::chrono::milliseconds(0))) {
    if (!writer->Write(r)) return grpc::Status::OK;
  }
  if (!req->follow()) return grpc::Status::OK;
  while (!ctx->IsCancelled() && !log.closed()) {
    for (const auto& r : log.Read(&next, kFollowPoll)) {
      if (!writer->Write(r)) return grpc::Status::OK;
    }
  }
  return grpc::Status::OK;
}

ServiceSpec SpecWith(SessionTable::Options options) {
  return ServiceSpec{
      .name = std::string(kEgressdService.name),
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()}, .delegated = {}},
      .make_handlers =
          [options](const std::string& runtime_dir) -> absl::StatusOr<ServiceHandlers> {
        SessionTable::Options with_dir = options;
        if (with_dir.runtime_dir.empty()) with_dir.runtime_dir = runtime_dir;
        auto sessions = std::make_shared<SessionTable>(std::move(with_dir));
        // A session that ended without its worker's detach (the worker
        // was killed) is forgotten on the registry's ENDED event.
        SessionWatcher::Callbacks callbacks;
        callbacks.ended = [sessions](const lazaret::supervisor::v1::SessionInfo& info) {
          sessions->Detach(info.record().id()).IgnoreError();
        };
        auto watcher = std::make_shared<SessionWatcher>(runtime_dir, std::move(callbacks));
        watcher->Start();
        ServiceHandlers h;
        h.services.push_back(std::make_unique<EgressServiceImpl>(sessions));
        h.on_shutdown = [sessions, watcher] {
          watcher->Stop();
          sessions->StopAll();
        };
        return h;
      },
  };
}

ServiceSpec Spec() {
  SessionTable::Options options;
  options.log_dir = UserStateDir() + "/requestlog";
  return SpecWith(std::move(options));
}

}  // namespace lazaret::egressd
