#include "sidecar/netrouter.h"

#include <memory>
#include <string>

#include "lazaret/netrouter/v1/netrouter.grpc.pb.h"
#include "services/common/unix_server.h"
#include "sidecar/namespace_guard.h"

namespace lazaret::netrouter {
namespace {

namespace pb = ::lazaret::netrouter::v1;

// One Hold call: answers HELD once, then only waits for the call to end.
// Whatever ends it - the holder cancelling, its process dying (the socket
// closes), the server shutting down - releases the hold exactly once.
class HoldReactor final : public grpc::ServerWriteReactor<pb::HoldEvent> {
 public:
  HoldReactor(NamespaceGuard* guard, std::string holder, uint32_t holders)
      : guard_(guard), holder_(std::move(holder)) {
    event_.set_state(pb::HOLD_STATE_HELD);
    event_.set_holders(holders);
    StartWrite(&event_);
  }
  void OnWriteDone(bool) override {}
  void OnCancel() override { Finish(grpc::Status::CANCELLED); }
  void OnDone() override {
    guard_->Release(holder_);
    delete this;
  }

 private:
  NamespaceGuard* const guard_;
  const std::string holder_;
  pb::HoldEvent event_;
};

class RefusedHold final : public grpc::ServerWriteReactor<pb::HoldEvent> {
 public:
  explicit RefusedHold(const absl::Status& s) { Finish(ToGrpcStatus(s)); }
  void OnDone() override { delete this; }
};

// The holder label is for the log only; keep it short and printable.
std::string HolderLabel(const std::string& in) {
  std::string out;
  for (char c : in.substr(0, 32)) out.push_back(c >= 0x21 && c <= 0x7e ? c : '?');
  return out.empty() ? "unnamed" : out;
}

class NetRouterServiceImpl final
    : public pb::NetRouterService::WithCallbackMethod_Hold<pb::NetRouterService::Service> {
 public:
  NetRouterServiceImpl() : guard_(CloseNamespace) {}

  grpc::ServerWriteReactor<pb::HoldEvent>* Hold(grpc::CallbackServerContext*,
                                                const pb::HoldRequest* request) override {
    const std::string holder = HolderLabel(request->holder());
    absl::StatusOr<uint32_t> holders = guard_.Acquire(holder);
    if (!holders.ok()) return new RefusedHold(holders.status());
    return new HoldReactor(&guard_, holder, *holders);
  }

 private:
  NamespaceGuard guard_;
};

}  // namespace

ServiceSpec Spec() { return SingleServiceSpec<NetRouterServiceImpl>("netrouter", kCapabilities); }

absl::Status Run(const ServiceOptions& options) { return ServeUntilSignal(Spec(), options); }

}  // namespace lazaret::netrouter
