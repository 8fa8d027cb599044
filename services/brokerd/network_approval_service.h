// lazaret.netapproval.v1.NetworkApprovalService: lazaret-netpolicyd asks
// the session's approvers about a name the sandbox looked up that no list
// allows (`egress = "ask"`). Served on the owner-only brokerd.sock
// (GrpcUnixServer: the peer is the user's own netpolicyd). Runs in
// lazaret-brokerd, unprivileged.
//
// The name and addresses were read from a sandbox's DNS query and the
// upstream's answer: netpolicyd checked them, and they are checked again
// here (a plain lowercase DNS name, bounded lists, no control characters)
// before they reach the book or an approver's screen. The session is looked
// up through the supervisor and configd, never taken from the caller. The
// request goes through the same RequestBook as an escalation (first
// decision wins, per-session pending cap), PENDING -> DONE; "for this
// profile" is written by configd only after the book consumed the
// decision, and only to the file whose hash the approver was shown.
#ifndef LAZARET_SERVICES_BROKERD_NETWORK_APPROVAL_SERVICE_H_
#define LAZARET_SERVICES_BROKERD_NETWORK_APPROVAL_SERVICE_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/config/v1/config.pb.h"
#include "lazaret/netapproval/v1/netapproval.grpc.pb.h"
#include "services/brokerd/audit_log.h"
#include "services/brokerd/pending.h"
#include "services/brokerd/session_lookup.h"

namespace lazaret::brokerd {

// How the service reaches the supervisor and configd (tests fake them).
struct NetworkApprovalDeps {
  std::function<absl::StatusOr<SessionFacts>(const std::string& session_id)> look_up;
  // configd PreviewNameAllow / ApplyNameAllow for the session's profile.
  std::function<absl::StatusOr<lazaret::config::v1::NameAllowPreview>(const SessionFacts& facts,
                                                                      const std::string& name)>
      preview;
  std::function<absl::StatusOr<lazaret::config::v1::NameAllowPreview>(
      const SessionFacts& facts, const std::string& name, const std::string& before_sha256)>
      apply;
  // Appends an audit record; nullptr: not audited (tests).
  std::function<absl::Status(const lazaret::approver::v1::AuditRecord&)> audit;
};

// The real dependencies: LookUpSession and configd over the runtime
// directory's sockets, the broker's audit log.
NetworkApprovalDeps ConfigdNetworkApprovalDeps(const std::string& runtime_dir, AuditLog* audit);

// Bounds on what an AskRequest may carry.
inline constexpr size_t kMaxAskAddresses = 64;
inline constexpr size_t kMaxRuleTextBytes = 512;
inline constexpr uint32_t kMaxAskTimeoutSeconds = 300;
inline constexpr uint32_t kDefaultAskTimeoutSeconds = 60;

// Checks an AskRequest (INVALID_ARGUMENT naming the field).
absl::Status CheckAskRequest(const lazaret::netapproval::v1::AskRequest& request);

class NetworkApprovalService final
    : public lazaret::netapproval::v1::NetworkApprovalService::Service {
 public:
  // `book` must outlive the service.
  NetworkApprovalService(RequestBook* book, NetworkApprovalDeps deps);

  grpc::Status Ask(grpc::ServerContext* ctx, const lazaret::netapproval::v1::AskRequest* req,
                   lazaret::netapproval::v1::AskResponse* resp) override;

  // The work of Ask; `gone` says whether the caller went away.
  absl::StatusOr<lazaret::netapproval::v1::AskResponse> Decide(
      const lazaret::netapproval::v1::AskRequest& request, const std::function<bool()>& gone);

 private:
  void Audit(const SessionFacts& facts, const lazaret::approver::v1::PendingRequest& pending,
             lazaret::approver::v1::AuditRecord::Decision decision,
             const lazaret::approver::v1::Approver* approver, const std::string& reason);

  RequestBook* const book_;
  const NetworkApprovalDeps deps_;
  std::atomic<uint64_t> next_ = 1;
};

}  // namespace lazaret::brokerd

#endif  // LAZARET_SERVICES_BROKERD_NETWORK_APPROVAL_SERVICE_H_
