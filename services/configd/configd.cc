#include "services/configd/configd.h"

#include "lazaret/config/v1/config.grpc.pb.h"
#include "services/common/unix_server.h"

namespace lazaret::configd {
namespace {

namespace pb = ::lazaret::config::v1;

class ConfigServiceImpl final : public pb::ConfigService::Service {
  grpc::Status ResolveProfile(grpc::ServerContext*, const pb::ResolveProfileRequest*,
                              pb::ResolveProfileResponse*) override {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "profile resolution is not built yet");
  }
};

}  // namespace

ServiceSpec Spec() {
  return ServiceSpec{
      .name = "configd",
      .capabilities = {.required = {kCapabilities.begin(), kCapabilities.end()}, .delegated = {}},
      .make_handlers = [](const std::string&) -> absl::StatusOr<ServiceHandlers> {
        ServiceHandlers h;
        h.services.push_back(std::make_unique<ConfigServiceImpl>());
        return h;
      },
  };
}

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::configd
