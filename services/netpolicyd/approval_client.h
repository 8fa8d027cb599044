// lazaret-netpolicyd's side of NetworkApprovalService (served by
// lazaret-brokerd on brokerd.sock): one Ask per held name, which returns
// when an approver decided, the timeout passed, nobody watches, or the call
// is cancelled (the session detaching). Runs in lazaret-netpolicyd,
// unprivileged; brokerd is the user's own service (the socket is
// owner-only), and its answer is read as one of a closed set of outcomes:
// anything else, and every error, is a refusal at the caller.
#ifndef LAZARET_SERVICES_NETPOLICYD_APPROVAL_CLIENT_H_
#define LAZARET_SERVICES_NETPOLICYD_APPROVAL_CLIENT_H_

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "lazaret/netapproval/v1/netapproval.pb.h"

namespace lazaret::netpolicyd {

// One Ask in progress, cancellable from another thread.
class AskCall {
 public:
  // Ends the call (Ask returns CANCELLED). Idempotent, thread-safe.
  void Cancel();
  bool cancelled() const;
  // `on_cancel` runs now when cancelled already, else when Cancel is
  // called, until ClearOnCancel. Runs under the call's lock: keep it short
  // (grpc::ClientContext::TryCancel).
  void SetOnCancel(std::function<void()> on_cancel);
  void ClearOnCancel();

 private:
  mutable std::mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> on_cancel_ ABSL_GUARDED_BY(mu_);
};

class ApprovalClient {
 public:
  virtual ~ApprovalClient() = default;
  // Blocks until brokerd answers, `deadline` passes (DEADLINE_EXCEEDED) or
  // `call` is cancelled (CANCELLED).
  virtual absl::StatusOr<lazaret::netapproval::v1::AskResponse> Ask(
      const lazaret::netapproval::v1::AskRequest& request,
      std::chrono::system_clock::time_point deadline, AskCall& call) = 0;
};

// NetworkApprovalService.Ask over <runtime_dir>/brokerd.sock.
class BrokerApprovalClient final : public ApprovalClient {
 public:
  explicit BrokerApprovalClient(std::string runtime_dir) : runtime_dir_(std::move(runtime_dir)) {}
  absl::StatusOr<lazaret::netapproval::v1::AskResponse> Ask(
      const lazaret::netapproval::v1::AskRequest& request,
      std::chrono::system_clock::time_point deadline, AskCall& call) override;

 private:
  const std::string runtime_dir_;
};

}  // namespace lazaret::netpolicyd

#endif  // LAZARET_SERVICES_NETPOLICYD_APPROVAL_CLIENT_H_
