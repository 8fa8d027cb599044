#include "helper/mount/mounthelper.h"

#include "lazaret/mounthelper/v1/mounthelper.grpc.pb.h"
#include "services/common/unix_server.h"

namespace lazaret::mounthelper {
namespace {

namespace pb = ::lazaret::mounthelper::v1;

// Tracks the overlays it mounted. Mounting arrives with the persistence work
// (inside `podman unshare`); until then it has mounted nothing.
class MountHelperServiceImpl final : public pb::MountHelperService::Service {
  grpc::Status ListMounts(grpc::ServerContext*, const pb::ListMountsRequest*,
                          pb::ListMountsResponse*) override {
    return grpc::Status::OK;
  }
};

}  // namespace

ServiceSpec Spec() {
  return SingleServiceSpec<MountHelperServiceImpl>("mount-helper", kCapabilities);
}

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::mounthelper
