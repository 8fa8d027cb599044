#include "services/netpolicyd/approval_client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "lazaret/netapproval/v1/netapproval.grpc.pb.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::netpolicyd {

namespace na = ::lazaret::netapproval::v1;

void AskCall::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return;
  cancelled_ = true;
  if (on_cancel_) on_cancel_();
}

bool AskCall::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

void AskCall::SetOnCancel(std::function<void()> on_cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) {
    on_cancel();
    return;
  }
  on_cancel_ = std::move(on_cancel);
}

void AskCall::ClearOnCancel() {
  std::lock_guard<std::mutex> lock(mu_);
  on_cancel_ = nullptr;
}

absl::StatusOr<na::AskResponse> BrokerApprovalClient::Ask(
    const na::AskRequest& request, std::chrono::system_clock::time_point deadline, AskCall& call) {
  auto stub = na::NetworkApprovalService::NewStub(DialUnix(ServiceSocketPath(runtime_dir_, kBrokerdService)));
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  call.SetOnCancel([&ctx] { ctx.TryCancel(); });
  na::AskResponse response;
  grpc::Status st = stub->Ask(&ctx, request, &response);
  call.ClearOnCancel();
  if (!st.ok()) {
    absl::Status s = FromGrpcStatus(st);
    return absl::Status(s.code(),
                        absl::StrCat("lazaret-brokerd NetworkApprovalService.Ask: ", s.message()));
  }
  return response;
}

}  // namespace lazaret::netpolicyd
