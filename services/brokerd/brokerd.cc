#include "services/brokerd/brokerd.h"

#include "lazaret/approver/v1/approver.grpc.pb.h"
#include "services/common/unix_server.h"

namespace lazaret::brokerd {
namespace {

namespace pb = ::lazaret::approver::v1;

// The approver side of the broker. Sandboxes cannot reach the broker until
// the escalation work adds the per-profile mTLS sockets, so nothing is ever
// pending yet; deciding an unknown request is NOT_FOUND, as it will stay.
class ApproverServiceImpl final : public pb::ApproverService::Service {
  grpc::Status Decide(grpc::ServerContext*, const pb::DecideRequest* req,
                      pb::DecideResponse*) override {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no pending request with id '" + req->request_id() + "'");
  }
};

}  // namespace

ServiceSpec Spec() { return SingleServiceSpec<ApproverServiceImpl>("brokerd", kCapabilities); }

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::brokerd
