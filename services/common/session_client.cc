#include "services/common/session_client.h"

#include "absl/strings/str_cat.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "lazaret/supervisor/v1/supervisor.grpc.pb.h"
#include "services/common/grpc_deadline.h"
#include "services/common/runtime_dir.h"
#include "services/common/service_catalog.h"
#include "services/common/session_id.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret {
namespace {

namespace cfg = ::lazaret::config::v1;
namespace sv = ::lazaret::supervisor::v1;

absl::Status Failed(const std::string& what, const grpc::Status& status) {
  absl::Status s = FromGrpcStatus(status);
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

}  // namespace

bool IsLiveSessionState(lazaret::supervisor::v1::SessionState state) {
  return state == lazaret::supervisor::v1::SESSION_STATE_REGISTERED ||
         state == lazaret::supervisor::v1::SESSION_STATE_ATTACHED;
}

absl::Status CheckSessionId(const std::string& id) {
  if (IsValidSessionId(id)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("'", id.substr(0, 40), "' is not a session id (12 lowercase hex digits)"));
}

absl::StatusOr<sv::SessionInfo> FetchSession(const std::string& runtime_dir,
                                             const std::string& id) {
  LAZ_RETURN_IF_ERROR(CheckSessionId(id));
  auto stub =
      sv::SupervisorService::NewStub(DialUnix(ServiceSocketPath(runtime_dir, kSupervisorService)));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, kHostCallTimeout);
  sv::GetSessionRequest req;
  req.set_id(id);
  sv::SessionInfo info;
  grpc::Status st = stub->GetSession(&ctx, req, &info);
  if (!st.ok()) return Failed(absl::StrCat("the supervisor's session ", id), st);
  if (info.record().id() != id) {
    return absl::InternalError(absl::StrCat("the supervisor answered another session for ", id));
  }
  return info;
}

absl::StatusOr<cfg::ResolvedProfile> ResolveSessionProfile(
    const std::string& runtime_dir, const lazaret::common::v1::SessionRecord& record) {
  auto stub = cfg::ConfigService::NewStub(DialUnix(ServiceSocketPath(runtime_dir, kConfigdService)));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, kHostCallTimeout);
  cfg::ResolveProfileRequest req;
  req.mutable_selector()->set_workspace_dir(record.workspace());
  req.mutable_selector()->set_explicit_config(record.explicit_config());
  req.set_profile(record.profile());
  cfg::ResolveProfileResponse resp;
  grpc::Status st = stub->ResolveProfile(&ctx, req, &resp);
  if (!st.ok()) {
    return Failed(absl::StrCat("lazaret-configd resolving profile '", record.profile(), "'"), st);
  }
  return std::move(*resp.mutable_profile());
}

}  // namespace lazaret
