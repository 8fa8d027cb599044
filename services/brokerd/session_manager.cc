#include "services/brokerd/session_manager.h"

#include <sys/stat.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/log.h"
#include "services/common/session_id.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::brokerd {

SessionManager::~SessionManager() { StopAll(); }

absl::StatusOr<std::shared_ptr<LiveSession>> SessionManager::StartLocked(const std::string& id,
                                                                         bool adopt) {
  if (!IsValidSessionId(id)) {
    return absl::InvalidArgumentError("a session id is 12 lowercase hex digits");
  }
  if (std::shared_ptr<LiveSession> live = Find(id)) return live;
  LAZ_ASSIGN_OR_RETURN(SessionFacts facts, LookUpSession(runtime_dir_, id));
  if (adopt) {
    // Only what this broker made before: <socket_dir>/<id> must exist.
    struct stat st;
    const std::string dir = absl::StrCat(facts.profile.escalation().socket_dir(), "/", id);
    if (!facts.profile.escalation().enabled() || lstat(dir.c_str(), &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
      return std::shared_ptr<LiveSession>();
    }
  }
  LAZ_ASSIGN_OR_RETURN(std::unique_ptr<LiveSession> live,
                       LiveSession::Start(std::move(facts), parts_, adopt));
  std::shared_ptr<LiveSession> shared = std::move(live);
  std::lock_guard<std::mutex> lock(mu_);
  sessions_[id] = shared;
  return shared;
}

absl::StatusOr<broker::v1::Endpoint> SessionManager::Attach(const std::string& id) {
  std::lock_guard<std::mutex> lock(attach_mu_);
  absl::StatusOr<std::shared_ptr<LiveSession>> live = StartLocked(id, /*adopt=*/false);
  if (!live.ok()) {
    return absl::Status(live.status().code(),
                        absl::StrCat("session ", id, ": ", live.status().message()));
  }
  LAZ_LOG_INFO << "session " << id << ": escalation endpoint at " << (*live)->View().socket();
  return (*live)->EndpointMessage();
}

absl::Status SessionManager::Detach(const std::string& id) {
  std::lock_guard<std::mutex> attach(attach_mu_);
  std::shared_ptr<LiveSession> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return absl::OkStatus();  // already gone: idempotent
    live = std::move(it->second);
    sessions_.erase(it);
  }
  live->Stop();
  LAZ_LOG_INFO << "session " << id << ": escalation endpoint removed";
  return absl::OkStatus();
}

void SessionManager::OnStarted(const std::string& id) {
  std::lock_guard<std::mutex> lock(attach_mu_);
  absl::StatusOr<std::shared_ptr<LiveSession>> live = StartLocked(id, /*adopt=*/true);
  if (!live.ok()) {
    LAZ_LOG_WARNING << "session " << id
                    << ": taking its escalation endpoint back: " << live.status().message();
  } else if (*live != nullptr) {
    LAZ_LOG_INFO << "session " << id << ": escalation endpoint taken back";
  }
}

void SessionManager::OnEnded(const std::string& id) { (void)Detach(id); }

std::vector<approver::v1::SessionEndpoint> SessionManager::Views() const {
  std::vector<approver::v1::SessionEndpoint> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, live] : sessions_) out.push_back(live->View());
  return out;
}

std::shared_ptr<LiveSession> SessionManager::Find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

void SessionManager::StopAll() {
  std::map<std::string, std::shared_ptr<LiveSession>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(sessions_);
  }
  for (auto& [id, live] : all) live->Stop();
}

grpc::Status EndpointService::AttachSession(grpc::ServerContext*,
                                            const broker::v1::AttachSessionRequest* req,
                                            broker::v1::Endpoint* resp) {
  absl::StatusOr<broker::v1::Endpoint> e = manager_->Attach(req->id());
  if (!e.ok()) return ToGrpcStatus(e.status());
  *resp = *std::move(e);
  return grpc::Status::OK;
}

grpc::Status EndpointService::DetachSession(grpc::ServerContext*,
                                            const broker::v1::DetachSessionRequest* req,
                                            broker::v1::DetachSessionResponse*) {
  if (!IsValidSessionId(req->id())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "a session id is 12 lowercase hex digits");
  }
  return ToGrpcStatus(manager_->Detach(req->id()));
}

}  // namespace lazaret::brokerd
