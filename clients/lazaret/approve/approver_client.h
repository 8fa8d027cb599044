// The terminal approver's client of lazaret-brokerd's ApproverService on
// <runtime_dir>/brokerd.sock. Runs in the `lazaret` CLI, as the user. The
// broker is a host service of the same user and is trusted to be itself;
// the requests it streams carry the sandbox's text and are shown only
// through display_text.h.
#ifndef LAZARET_CLIENTS_LAZARET_APPROVE_APPROVER_CLIENT_H_
#define LAZARET_CLIENTS_LAZARET_APPROVE_APPROVER_CLIENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/approver/v1/approver.grpc.pb.h"

namespace lazaret::cli::approve {

// Decide, ParseCommand and GetRequest: each call's bound. Approve waits for
// the command to start.
inline constexpr std::chrono::seconds kCallTimeout{30};

class ApproverClient {
 public:
  explicit ApproverClient(const std::string& socket);

  // Streams WatchPending to `sink` until the stream ends or Cancel; the
  // stream's end as a Status (OK after Cancel). Blocks; one at a time.
  absl::Status Watch(const ::lazaret::approver::v1::WatchPendingRequest& request,
                     const std::function<void(const ::lazaret::approver::v1::PendingEvent&)>& sink);
  // Ends a running Watch (from any thread).
  void Cancel();

  absl::StatusOr<::lazaret::approver::v1::DecideResponse> Decide(
      const ::lazaret::approver::v1::DecideRequest& request);
  absl::StatusOr<::lazaret::approver::v1::ParseCommandResponse> ParseCommand(
      const ::lazaret::approver::v1::ParseCommandRequest& request);
  absl::StatusOr<::lazaret::approver::v1::RequestState> GetRequest(
      const ::lazaret::approver::v1::GetRequestRequest& request);
  absl::StatusOr<::lazaret::approver::v1::ListSessionsResponse> ListSessions();

 private:
  absl::Status Explain(const char* rpc, const grpc::Status& status) const;

  std::string socket_;
  std::unique_ptr<::lazaret::approver::v1::ApproverService::Stub> stub_;
  std::mutex mu_;
  grpc::ClientContext* watch_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace lazaret::cli::approve

#endif  // LAZARET_CLIENTS_LAZARET_APPROVE_APPROVER_CLIENT_H_
