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

ServiceSpec Spec() {
  return ServiceSpec{
      .name = "netrouter",
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()}, .delegated = {}},
      .make_handlers = [](const std::string&) -> absl::StatusOr<ServiceHandlers> {
        ServiceHandlers h;
        h.services.push_back(std::make_unique<NetRouterServiceImpl>());
        return h;
      },
  };
}

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::netrouter
