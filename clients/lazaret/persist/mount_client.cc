#include "clients/lazaret/persist/mount_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/common/grpc_deadline.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::cli::persist {
namespace {

namespace pb = ::lazaret::mounthelper::v1;

}  // namespace

std::string MountHelperSocket(const std::string& runtime_dir) {
  return ServiceSocketPath(runtime_dir, kMountHelperService);
}

MountClient::MountClient(const std::string& socket)
    : socket_(socket), stub_(pb::MountHelperService::NewStub(DialUnix(socket))) {}

absl::Status MountClient::Explain(const char* rpc, const grpc::Status& s,
                                  std::chrono::seconds timeout) const {
  return ExplainServiceCall("lazaret-mount-helper", socket_, rpc, s, timeout);
}

absl::StatusOr<pb::AttachSessionResponse> MountClient::AttachSession(const std::string& session,
                                                                     const std::string& image_id,
                                                                     std::chrono::seconds timeout) {
  pb::AttachSessionRequest req;
  req.set_session_id(session);
  req.set_image_id(image_id);
  pb::AttachSessionResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, timeout);
  LAZ_RETURN_IF_ERROR(Explain("AttachSession", stub_->AttachSession(&cc, req, &resp), timeout));
  return resp;
}

absl::StatusOr<pb::DetachSessionResponse> MountClient::DetachSession(const std::string& session,
                                                                     std::chrono::seconds timeout) {
  pb::DetachSessionRequest req;
  req.set_session_id(session);
  pb::DetachSessionResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, timeout);
  LAZ_RETURN_IF_ERROR(Explain("DetachSession", stub_->DetachSession(&cc, req, &resp), timeout));
  return resp;
}

absl::StatusOr<pb::ListMountsResponse> MountClient::ListMounts() {
  pb::ListMountsResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, kQueryTimeout);
  LAZ_RETURN_IF_ERROR(
      Explain("ListMounts", stub_->ListMounts(&cc, pb::ListMountsRequest(), &resp), kQueryTimeout));
  return resp;
}

absl::StatusOr<pb::DescribeStateResponse> MountClient::DescribeState(
    const std::string& profile, const std::string& workspace, const std::string& explicit_config) {
  pb::DescribeStateRequest req;
  req.set_profile(profile);
  req.set_workspace_dir(workspace);
  req.set_explicit_config(explicit_config);
  pb::DescribeStateResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, kQueryTimeout);
  LAZ_RETURN_IF_ERROR(
      Explain("DescribeState", stub_->DescribeState(&cc, req, &resp), kQueryTimeout));
  return resp;
}

absl::StatusOr<pb::ResetStateResponse> MountClient::ResetState(
    const std::string& profile, const std::string& directory, const std::string& workspace,
    const std::string& explicit_config) {
  pb::ResetStateRequest req;
  req.set_profile(profile);
  req.set_directory(directory);
  req.set_workspace_dir(workspace);
  req.set_explicit_config(explicit_config);
  pb::ResetStateResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, kQueryTimeout);
  LAZ_RETURN_IF_ERROR(Explain("ResetState", stub_->ResetState(&cc, req, &resp), kQueryTimeout));
  return resp;
}

absl::StatusOr<pb::CleanupResponse> MountClient::Cleanup() {
  pb::CleanupResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, kQueryTimeout);
  LAZ_RETURN_IF_ERROR(
      Explain("Cleanup", stub_->Cleanup(&cc, pb::CleanupRequest(), &resp), kQueryTimeout));
  return resp;
}

absl::Status CheckAttachedMounts(const std::vector<PlannedOverlay>& planned,
                                 const std::string& image_id,
                                 const pb::AttachSessionResponse& answer) {
  if (static_cast<size_t>(answer.mounts_size()) != planned.size()) {
    return absl::InternalError(absl::StrCat("lazaret-mount-helper answered ", answer.mounts_size(),
                                            " overlays for ", planned.size(),
                                            " persistent directories"));
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    const pb::OverlayMount& m = answer.mounts(static_cast<int>(i));
    const PlannedOverlay& p = planned[i];
    if (m.directory() != p.directory) {
      return absl::InternalError(absl::StrCat("lazaret-mount-helper answered overlay ", i + 1,
                                              " for ", m.directory().substr(0, 256),
                                              ", planned for ", p.directory));
    }
    if (m.merged() != p.merged) {
      return absl::InternalError(absl::StrCat("lazaret-mount-helper mounted ", p.directory, " at ",
                                              m.merged().substr(0, 256), ", not at the planned ",
                                              p.merged));
    }
    if (m.image_id() != image_id) {
      return absl::InternalError(absl::StrCat("lazaret-mount-helper's overlay of ", p.directory,
                                              " is over image ", m.image_id().substr(0, 80),
                                              ", not the sandbox's ", image_id));
    }
  }
  return absl::OkStatus();
}

absl::Status DetachSessionBestEffort(const std::string& runtime_dir, const std::string& session) {
  MountClient client(MountHelperSocket(runtime_dir));
  absl::StatusOr<pb::DetachSessionResponse> r = client.DetachSession(session);
  const absl::Status& s = r.status();
  if (s.ok() || absl::IsUnavailable(s) || absl::IsNotFound(s) || absl::IsUnimplemented(s)) {
    return absl::OkStatus();
  }
  return s;
}

}  // namespace lazaret::cli::persist
