#include "clients/lazaret/net/netpolicy_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/grpc_deadline.h"
#include "services/common/service_catalog.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::net {
namespace {

namespace pb = ::lazaret::netpolicy::v1;

}  // namespace

std::string NetPolicySocket(const std::string& runtime_dir) {
  return ServiceSocketPath(runtime_dir, kNetPolicydService);
}

NetPolicyClient::NetPolicyClient(const std::string& socket)
    : socket_(socket), stub_(pb::NetPolicyService::NewStub(DialUnix(socket))) {}

absl::Status NetPolicyClient::Explain(const char* rpc, const grpc::Status& s,
                                      std::chrono::seconds timeout) const {
  return ExplainServiceCall("lazaret-netpolicyd", socket_, rpc, s, timeout);
}

absl::StatusOr<pb::PolicyApplied> NetPolicyClient::Attach(const std::string& session,
                                                          std::chrono::seconds timeout) {
  pb::AttachSessionRequest req;
  req.mutable_session()->set_id(session);
  pb::PolicyApplied resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, timeout);
  if (absl::Status s = Explain("AttachSession", stub_->AttachSession(&cc, req, &resp), timeout);
      !s.ok()) {
    return s;
  }
  return resp;
}

absl::StatusOr<pb::PolicyApplied> NetPolicyClient::Reload(const std::string& session) {
  pb::ReloadSessionRequest req;
  req.mutable_session()->set_id(session);
  pb::PolicyApplied resp;
  grpc::ClientContext cc;
  // A reload resolves the configuration and applies it, like an attach.
  SetDeadline(&cc, kAttachTimeout);
  if (absl::Status s =
          Explain("ReloadSession", stub_->ReloadSession(&cc, req, &resp), kAttachTimeout);
      !s.ok()) {
    return s;
  }
  return resp;
}

absl::StatusOr<pb::PolicyApplied> NetPolicyClient::Change(const pb::ChangeSessionRequest& req) {
  pb::PolicyApplied resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, kAttachTimeout);
  if (absl::Status s =
          Explain("ChangeSession", stub_->ChangeSession(&cc, req, &resp), kAttachTimeout);
      !s.ok()) {
    return s;
  }
  return resp;
}

absl::Status NetPolicyClient::Detach(const std::string& session, std::chrono::seconds timeout) {
  pb::DetachSessionRequest req;
  req.mutable_session()->set_id(session);
  pb::DetachSessionResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, timeout);
  return Explain("DetachSession", stub_->DetachSession(&cc, req, &resp), timeout);
}

absl::StatusOr<pb::ListSessionsResponse> NetPolicyClient::List() {
  pb::ListSessionsResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, kCallTimeout);
  if (absl::Status s = Explain(
          "ListSessions", stub_->ListSessions(&cc, pb::ListSessionsRequest(), &resp), kCallTimeout);
      !s.ok()) {
    return s;
  }
  return resp;
}

absl::StatusOr<pb::SessionPolicy> NetPolicyClient::Show(const std::string& session) {
  pb::ShowPolicyRequest req;
  req.mutable_session()->set_id(session);
  pb::SessionPolicy resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, kCallTimeout);
  if (absl::Status s = Explain("ShowPolicy", stub_->ShowPolicy(&cc, req, &resp), kCallTimeout);
      !s.ok()) {
    return s;
  }
  return resp;
}

absl::StatusOr<pb::TestDestinationResponse> NetPolicyClient::Test(
    const pb::TestDestinationRequest& req) {
  pb::TestDestinationResponse resp;
  grpc::ClientContext cc;
  // A name is resolved upstream first.
  SetDeadline(&cc, kAttachTimeout);
  if (absl::Status s =
          Explain("TestDestination", stub_->TestDestination(&cc, req, &resp), kAttachTimeout);
      !s.ok()) {
    return s;
  }
  return resp;
}

absl::Status NetPolicyClient::WatchLog(const std::string& session, bool follow,
                                       const std::function<void(const pb::LogEntry&)>& sink) {
  pb::WatchLogRequest req;
  req.mutable_session()->set_id(session);
  req.set_follow(follow);
  grpc::ClientContext cc;
  if (!follow) SetDeadline(&cc, kCallTimeout);
  std::unique_ptr<grpc::ClientReader<pb::LogEntry>> reader = stub_->WatchLog(&cc, req);
  pb::LogEntry entry;
  while (reader->Read(&entry)) sink(entry);
  return Explain("WatchLog", reader->Finish(), kCallTimeout);
}

absl::Status DetachSessionBestEffort(const std::string& runtime_dir, const std::string& session) {
  NetPolicyClient client(NetPolicySocket(runtime_dir));
  absl::Status s = client.Detach(session, std::chrono::seconds(3));
  if (s.ok() || absl::IsUnavailable(s) || absl::IsNotFound(s) || absl::IsDeadlineExceeded(s) ||
      absl::IsUnimplemented(s)) {
    return absl::OkStatus();
  }
  return s;
}

}  // namespace lazaret::cli::net
