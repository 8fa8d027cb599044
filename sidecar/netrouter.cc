#include "sidecar/netrouter.h"

#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "services/common/unix_server.h"

namespace lazaret::netrouter {
namespace {

namespace pb = ::lazaret::netrouter::v1;

class NetRouterServiceImpl final : public pb::NetRouterService::Service {
  grpc::Status ListRoutes(grpc::ServerContext*, const pb::ListRoutesRequest*,
                          pb::ListRoutesResponse*) override {
    return grpc::Status::OK;
  }
};

}  // namespace

ServiceSpec Spec() { return SingleServiceSpec<NetRouterServiceImpl>("netrouter", kCapabilities); }

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::netrouter
