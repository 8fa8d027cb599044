#include "services/netpolicyd/netpolicyd.h"

#include "lazaret/netpolicy/v1/netpolicy.grpc.pb.h"
#include "services/common/unix_server.h"

namespace lazaret::netpolicyd {
namespace {

namespace pb = ::lazaret::netpolicy::v1;

// Holds the sessions it has been told about. Pushing routes to a sidecar
// router arrives with egress enforcement; until then no session can attach,
// so `lazaret run` refuses to claim a policy is in force.
class NetPolicyServiceImpl final : public pb::NetPolicyService::Service {
  grpc::Status ListSessions(grpc::ServerContext*, const pb::ListSessionsRequest*,
                            pb::ListSessionsResponse*) override {
    return grpc::Status::OK;
  }
};

}  // namespace

ServiceSpec Spec() { return SingleServiceSpec<NetPolicyServiceImpl>("netpolicyd", kCapabilities); }

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::netpolicyd
