// The `lazaret` CLI's client of lazaret-brokerd on brokerd.sock in the
// runtime directory: `lazaret run` attaches its session's escalation
// endpoint before the sandbox exists and detaches it at the teardown
// (broker.v1.EscalationEndpointService), and `lazaret audit` reads the audit
// (approver.v1.ApproverService.ReadAudit). Runs in the CLI, as the user.
// brokerd is a host service of the same user and is trusted to say what it
// created - endpoint.h checks the directories it names all the same before
// any of them is mounted; the audit records carry the agent's text and are
// escaped by whoever prints them (audit_format.h).
#ifndef LAZARET_CLIENTS_LAZARET_ESCALATION_BROKER_CLIENT_H_
#define LAZARET_CLIENTS_LAZARET_ESCALATION_BROKER_CLIENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.grpc.pb.h"
#include "lazaret/broker/v1/broker.grpc.pb.h"

namespace lazaret::cli::escalation {

// <runtime_dir>/brokerd.sock: the service catalog's socket of
// lazaret-brokerd (services/common/service_catalog.h).
std::string BrokerSocket(const std::string& runtime_dir);

// How long `lazaret run` waits for AttachSession (the broker reads the
// registry and configd, creates the socket and issues a certificate).
inline constexpr std::chrono::seconds kAttachTimeout{10};
// DetachSession at the teardown.
inline constexpr std::chrono::seconds kDetachTimeout{3};
// ReadAudit: the whole stream.
inline constexpr std::chrono::seconds kReadAuditTimeout{30};

class BrokerClient {
 public:
  explicit BrokerClient(const std::string& socket);

  const std::string& socket() const { return socket_; }

  // Each call's error says what failed: UNAVAILABLE names the socket and
  // `lazaret up`, DEADLINE_EXCEEDED the wait, UNIMPLEMENTED an older
  // broker; a refusal keeps brokerd's code and message.
  absl::StatusOr<::lazaret::broker::v1::Endpoint> AttachSession(
      const std::string& session, std::chrono::seconds timeout = kAttachTimeout);
  absl::Status DetachSession(const std::string& session,
                             std::chrono::seconds timeout = kDetachTimeout);

  // The audit records, oldest first, each to `sink` as it arrives;
  // `*received` counts them (so a caller knows whether a failed stream
  // delivered anything). Empty `session`: every session; `last` 0: all.
  absl::Status ReadAudit(
      const std::string& session, uint32_t last,
      const std::function<void(const ::lazaret::approver::v1::AuditRecord&)>& sink,
      size_t* received);

 private:
  absl::Status Explain(const char* rpc, const grpc::Status& status,
                       std::chrono::seconds timeout) const;

  std::string socket_;
  std::unique_ptr<::lazaret::broker::v1::EscalationEndpointService::Stub> endpoints_;
  std::unique_ptr<::lazaret::approver::v1::ApproverService::Stub> approver_;
};

// DetachSession of a session whose containers are gone, best effort: OK
// also when brokerd is not running, does not know the session or does not
// answer in time (it follows the registry's ENDED event and ends the
// endpoint anyway). The error of any other refusal, for the caller to show.
absl::Status DetachSessionBestEffort(const std::string& runtime_dir, const std::string& session);

}  // namespace lazaret::cli::escalation

#endif  // LAZARET_CLIENTS_LAZARET_ESCALATION_BROKER_CLIENT_H_
