#include "clients/lazaret/approve/approver_client.h"

#include "absl/strings/str_cat.h"
#include "services/common/grpc_deadline.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::approve {
namespace {

namespace pb = ::lazaret::approver::v1;

}  // namespace

ApproverClient::ApproverClient(const std::string& socket)
    : socket_(socket), stub_(pb::ApproverService::NewStub(DialUnix(socket))) {}

absl::Status ApproverClient::Explain(const char* rpc, const grpc::Status& s) const {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
      return absl::UnavailableError(absl::StrCat("lazaret-brokerd does not answer on ", socket_,
                                                 " (", s.error_message(),
                                                 "). Start Lazaret: lazaret up"));
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::UnimplementedError(
          absl::StrCat("lazaret-brokerd on ", socket_, " does not implement ", rpc,
                       " (restart the service set: lazaret down; lazaret up)"));
    default:
      // FAILED_PRECONDITION names who decided first: the message as it is.
      return absl::Status(FromGrpcStatus(s).code(), s.error_message());
  }
}

absl::Status ApproverClient::Watch(const pb::WatchPendingRequest& request,
                                   const std::function<void(const pb::PendingEvent&)>& sink) {
  grpc::ClientContext cc;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (cancelled_) return absl::OkStatus();
    watch_ = &cc;
  }
  std::unique_ptr<grpc::ClientReader<pb::PendingEvent>> reader = stub_->WatchPending(&cc, request);
  pb::PendingEvent event;
  while (reader->Read(&event)) sink(event);
  const grpc::Status s = reader->Finish();
  std::lock_guard<std::mutex> l(mu_);
  watch_ = nullptr;
  if (cancelled_) return absl::OkStatus();
  if (s.ok()) return absl::UnavailableError("lazaret-brokerd ended the stream of requests");
  return Explain("WatchPending", s);
}

void ApproverClient::Cancel() {
  std::lock_guard<std::mutex> l(mu_);
  cancelled_ = true;
  if (watch_ != nullptr) watch_->TryCancel();
}

absl::StatusOr<pb::DecideResponse> ApproverClient::Decide(const pb::DecideRequest& request) {
  grpc::ClientContext cc;
  SetDeadline(&cc, kCallTimeout);
  pb::DecideResponse out;
  if (grpc::Status s = stub_->Decide(&cc, request, &out); !s.ok()) return Explain("Decide", s);
  return out;
}

absl::StatusOr<pb::ParseCommandResponse> ApproverClient::ParseCommand(
    const pb::ParseCommandRequest& request) {
  grpc::ClientContext cc;
  SetDeadline(&cc, kCallTimeout);
  pb::ParseCommandResponse out;
  if (grpc::Status s = stub_->ParseCommand(&cc, request, &out); !s.ok()) {
    return Explain("ParseCommand", s);
  }
  return out;
}

absl::StatusOr<pb::RequestState> ApproverClient::GetRequest(const pb::GetRequestRequest& request) {
  grpc::ClientContext cc;
  SetDeadline(&cc, kCallTimeout);
  pb::RequestState out;
  if (grpc::Status s = stub_->GetRequest(&cc, request, &out); !s.ok()) {
    return Explain("GetRequest", s);
  }
  return out;
}

absl::StatusOr<pb::ListSessionsResponse> ApproverClient::ListSessions() {
  grpc::ClientContext cc;
  SetDeadline(&cc, kCallTimeout);
  pb::ListSessionsResponse out;
  if (grpc::Status s = stub_->ListSessions(&cc, pb::ListSessionsRequest(), &out); !s.ok()) {
    return Explain("ListSessions", s);
  }
  return out;
}

}  // namespace lazaret::cli::approve
