// The broker's live sessions: the endpoint of each session that asked for
// one (`lazaret run` through EscalationEndpointService.AttachSession), the
// sessions a restarted broker takes back, and the end of each one when the
// supervisor's registry says it ended or its owner detaches it. Runs in
// lazaret-brokerd (the user, no capabilities). A caller names a session by
// id only; its record and profile come from the supervisor and configd.
#ifndef LAZARET_SERVICES_BROKERD_SESSION_MANAGER_H_
#define LAZARET_SERVICES_BROKERD_SESSION_MANAGER_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.pb.h"
#include "lazaret/broker/v1/broker.grpc.pb.h"
#include "services/brokerd/live_session.h"

namespace lazaret::brokerd {

class SessionManager {
 public:
  SessionManager(std::string runtime_dir, BrokerParts parts)
      : runtime_dir_(std::move(runtime_dir)), parts_(std::move(parts)) {}
  ~SessionManager();  // StopAll()
  SessionManager(const SessionManager&) = delete;
  SessionManager& operator=(const SessionManager&) = delete;

  // The session's endpoint, made now or already live.
  absl::StatusOr<broker::v1::Endpoint> Attach(const std::string& id);
  absl::Status Detach(const std::string& id);
  // From the registry watch: a live session whose endpoint directories this
  // broker made before it restarted is taken back (new certificates, the
  // socket bound again); a session without them is left to its Attach.
  void OnStarted(const std::string& id);
  void OnEnded(const std::string& id);

  std::vector<approver::v1::SessionEndpoint> Views() const;
  std::shared_ptr<LiveSession> Find(const std::string& id) const;
  void StopAll();

 private:
  absl::StatusOr<std::shared_ptr<LiveSession>> StartLocked(const std::string& id, bool adopt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(attach_mu_);

  const std::string runtime_dir_;
  const BrokerParts parts_;
  std::mutex attach_mu_;  // one start or stop at a time
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<LiveSession>> sessions_ ABSL_GUARDED_BY(mu_);
};

// EscalationEndpointService over a SessionManager.
class EndpointService final : public broker::v1::EscalationEndpointService::Service {
 public:
  explicit EndpointService(SessionManager* manager) : manager_(manager) {}
  grpc::Status AttachSession(grpc::ServerContext*, const broker::v1::AttachSessionRequest* req,
                             broker::v1::Endpoint* resp) override;
  grpc::Status DetachSession(grpc::ServerContext*, const broker::v1::DetachSessionRequest* req,
                             broker::v1::DetachSessionResponse*) override;

 private:
  SessionManager* const manager_;
};

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_SESSION_MANAGER_H_
