// An EscalationEndpointService and an ApproverService (ReadAudit only) for
// tests of the `lazaret` CLI's side: they answer with what the test set and
// record every request. Run in the test process, served over a real Unix
// socket (GrpcUnixServer); trust everything, check nothing.
#ifndef LAZARET_CLIENTS_LAZARET_ESCALATION_FAKE_BROKER_SERVICE_H_
#define LAZARET_CLIENTS_LAZARET_ESCALATION_FAKE_BROKER_SERVICE_H_

#include <mutex>
#include <string>
#include <vector>

#include "lazaret/approver/v1/approver.grpc.pb.h"
#include "lazaret/broker/v1/broker.grpc.pb.h"

namespace lazaret::cli::escalation {

class FakeEndpointService final : public ::lazaret::broker::v1::EscalationEndpointService::Service {
 public:
  grpc::Status AttachSession(grpc::ServerContext*,
                             const ::lazaret::broker::v1::AttachSessionRequest* r,
                             ::lazaret::broker::v1::Endpoint* out) override {
    std::lock_guard<std::mutex> l(mu);
    calls.push_back("AttachSession " + r->id());
    *out = endpoint;
    return status;
  }
  grpc::Status DetachSession(grpc::ServerContext*,
                             const ::lazaret::broker::v1::DetachSessionRequest* r,
                             ::lazaret::broker::v1::DetachSessionResponse*) override {
    std::lock_guard<std::mutex> l(mu);
    calls.push_back("DetachSession " + r->id());
    return status;
  }

  std::mutex mu;
  grpc::Status status = grpc::Status::OK;
  ::lazaret::broker::v1::Endpoint endpoint;
  std::vector<std::string> calls;
};

class FakeApproverService final : public ::lazaret::approver::v1::ApproverService::Service {
 public:
  grpc::Status ReadAudit(grpc::ServerContext*, const ::lazaret::approver::v1::ReadAuditRequest* r,
                         grpc::ServerWriter<::lazaret::approver::v1::AuditRecord>* w) override {
    std::vector<::lazaret::approver::v1::AuditRecord> out;
    {
      std::lock_guard<std::mutex> l(mu);
      requests.push_back(*r);
      out = records;
    }
    for (const auto& rec : out) w->Write(rec);
    return status;
  }

  std::mutex mu;
  grpc::Status status = grpc::Status::OK;
  // Sent as they are, whatever the request asked for.
  std::vector<::lazaret::approver::v1::AuditRecord> records;
  std::vector<::lazaret::approver::v1::ReadAuditRequest> requests;
};

}  // namespace lazaret::cli::escalation

#endif  // LAZARET_CLIENTS_LAZARET_ESCALATION_FAKE_BROKER_SERVICE_H_
