#include "services/common/profile_paths/resolve_profile.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "services/common/grpc_deadline.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"

namespace lazaret::config {

absl::StatusOr<v1::ResolvedProfile> ResolveProfileThroughConfigd(
    const std::string& runtime_dir, const std::string& workspace_dir,
    const std::string& explicit_config, const std::string& profile,
    const std::function<void(const std::string&)>& warn) {
  const std::string socket = ServiceSocketPath(runtime_dir, kConfigdService);
  auto stub = v1::ConfigService::NewStub(DialUnix(socket));
  v1::ResolveProfileRequest req;
  req.mutable_selector()->set_workspace_dir(workspace_dir);
  req.mutable_selector()->set_explicit_config(explicit_config);
  req.set_profile(profile);
  v1::ResolveProfileResponse resp;
  grpc::ClientContext cc;
  SetDeadline(&cc, std::chrono::seconds(10));
  const grpc::Status s = stub->ResolveProfile(&cc, req, &resp);
  if (!s.ok()) {
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
        s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::UnavailableError(
          absl::StrCat("Lazaret is not running (no answer from the config service on ", socket,
                       "). Start it first; run: lazaret up"));
    }
    return absl::Status(FromGrpcStatus(s).code(),
                        absl::StrCat("resolving the profile: ", s.error_message()));
  }
  const std::string own = absl::StrCat("profiles.", resp.profile().name());
  for (const v1::Diagnostic& d : resp.warnings()) {
    if (absl::StartsWith(d.key_path(), "profiles.") && d.key_path() != own &&
        !absl::StartsWith(d.key_path(), own + ".")) {
      continue;
    }
    warn(absl::StrCat("warning: ", d.file(), d.line() > 0 ? absl::StrCat(":", d.line()) : "", ": ",
                      d.key_path(), ": ", d.message()));
  }
  return resp.profile();
}

}  // namespace lazaret::config
