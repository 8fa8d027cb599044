#include "clients/lazaret/escalation/broker_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/grpc_deadline.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::escalation {
namespace {

namespace bpb = ::lazaret::broker::v1;
namespace apb = ::lazaret::approver::v1;

}  // namespace

std::string BrokerSocket(const std::string& runtime_dir) {
  return ServiceSocketPath(runtime_dir, kBrokerdService);
}

BrokerClient::BrokerClient(const std::string& socket) : socket_(socket) {
  std::shared_ptr<grpc::Channel> channel = DialUnix(socket);
  endpoints_ = bpb::EscalationEndpointService::NewStub(channel);
  approver_ = apb::ApproverService::NewStub(channel);
}

absl::Status BrokerClient::Explain(const char* rpc, const grpc::Status& s,
                                   std::chrono::seconds timeout) const {
  return ExplainServiceCall("lazaret-brokerd", socket_, rpc, s, timeout);
}

absl::StatusOr<bpb::Endpoint> BrokerClient::AttachSession(const std::string& session,
                                                          std::chrono::seconds timeout) {
  bpb::AttachSessionRequest req;
  req.set_id(session);
  bpb::Endpoint resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, timeout);
  if (absl::Status s =
          Explain("AttachSession", endpoints_->AttachSession(&cc, req, &resp), timeout);
      !s.ok()) {
    return s;
  }
  return resp;
}

absl::Status BrokerClient::DetachSession(const std::string& session, std::chrono::seconds timeout) {
  bpb::DetachSessionRequest req;
  req.set_id(session);
  bpb::DetachSessionResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, timeout);
  return Explain("DetachSession", endpoints_->DetachSession(&cc, req, &resp), timeout);
}

absl::Status BrokerClient::ReadAudit(const std::string& session, uint32_t last,
                                     const std::function<void(const apb::AuditRecord&)>& sink,
                                     size_t* received) {
  apb::ReadAuditRequest req;
  req.set_session_id(session);
  req.set_last(last);
  grpc::ClientContext cc;
  SetDeadline(&cc, kReadAuditTimeout);
  std::unique_ptr<grpc::ClientReader<apb::AuditRecord>> reader = approver_->ReadAudit(&cc, req);
  apb::AuditRecord record;
  *received = 0;
  while (reader->Read(&record)) {
    ++*received;
    sink(record);
  }
  return Explain("ReadAudit", reader->Finish(), kReadAuditTimeout);
}

absl::Status DetachSessionBestEffort(const std::string& runtime_dir, const std::string& session) {
  BrokerClient client(BrokerSocket(runtime_dir));
  absl::Status s = client.DetachSession(session);
  if (s.ok() || absl::IsUnavailable(s) || absl::IsNotFound(s) || absl::IsDeadlineExceeded(s) ||
      absl::IsUnimplemented(s)) {
    return absl::OkStatus();
  }
  return s;
}

}  // namespace lazaret::cli::escalation
