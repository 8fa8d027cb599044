// The `lazaret` CLI's client of lazaret-mount-helper on mount-helper.sock in
// the runtime directory (mounthelper.v1.MountHelperService): `lazaret run`
// attaches its session's overlays before the sandbox exists and detaches
// them at the teardown, `lazaret state` describes and resets a profile's
// persistent state, `lazaret clean` asks for a cleanup. Runs in the CLI, as
// the user. The helper is a host service of the same user and is trusted
// to say what it mounted; `lazaret run` still checks that the merged paths
// it answers are exactly the planned ones before any is bound
// (CheckAttachedMounts). The paths inside a persistent directory that
// DescribeState lists were written by the sandbox: whoever prints them
// escapes them (state_format.h).
#ifndef LAZARET_CLIENTS_LAZARET_PERSIST_MOUNT_CLIENT_H_
#define LAZARET_CLIENTS_LAZARET_PERSIST_MOUNT_CLIENT_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lazaret/mounthelper/v1/mounthelper.grpc.pb.h"

namespace lazaret::cli::persist {

// <runtime_dir>/mount-helper.sock: the service catalog's socket of
// lazaret-mount-helper (services/common/service_catalog.h).
std::string MountHelperSocket(const std::string& runtime_dir);

// AttachSession mounts the image (podman image mount) and one overlay per
// directory on first use; everything else is quick.
inline constexpr std::chrono::seconds kAttachTimeout{120};
inline constexpr std::chrono::seconds kDetachTimeout{30};
inline constexpr std::chrono::seconds kQueryTimeout{60};

class MountClient {
 public:
  explicit MountClient(const std::string& socket);

  const std::string& socket() const { return socket_; }

  // Each call's error says what failed: UNAVAILABLE names the socket and
  // `lazaret up`, DEADLINE_EXCEEDED the wait, UNIMPLEMENTED an older
  // helper; a refusal keeps the helper's code and message.
  absl::StatusOr<::lazaret::mounthelper::v1::AttachSessionResponse> AttachSession(
      const std::string& session, const std::string& image_id,
      std::chrono::seconds timeout = kAttachTimeout);
  absl::StatusOr<::lazaret::mounthelper::v1::DetachSessionResponse> DetachSession(
      const std::string& session, std::chrono::seconds timeout = kDetachTimeout);
  absl::StatusOr<::lazaret::mounthelper::v1::ListMountsResponse> ListMounts();
  // `workspace` and `explicit_config` (absolute, or empty): where the
  // profile is resolved, as `lazaret run` there with --config would.
  absl::StatusOr<::lazaret::mounthelper::v1::DescribeStateResponse> DescribeState(
      const std::string& profile, const std::string& workspace = "",
      const std::string& explicit_config = "");
  absl::StatusOr<::lazaret::mounthelper::v1::ResetStateResponse> ResetState(
      const std::string& profile, const std::string& directory,
      const std::string& workspace = "", const std::string& explicit_config = "");
  absl::StatusOr<::lazaret::mounthelper::v1::CleanupResponse> Cleanup();

 private:
  absl::Status Explain(const char* rpc, const grpc::Status& status,
                       std::chrono::seconds timeout) const;

  std::string socket_;
  std::unique_ptr<::lazaret::mounthelper::v1::MountHelperService::Stub> stub_;
};

// One persistent directory as `lazaret run` planned it: D inside the
// container and the merged directory bound over it.
struct PlannedOverlay {
  std::string directory;
  std::string merged;
};

// OK exactly when `answer` has one mount per planned directory, in the
// planned order, each for that directory, at the planned merged path, over
// `image_id`. Otherwise the error names the first difference.
absl::Status CheckAttachedMounts(const std::vector<PlannedOverlay>& planned,
                                 const std::string& image_id,
                                 const ::lazaret::mounthelper::v1::AttachSessionResponse& answer);

// DetachSession of a session whose containers are gone, best effort: OK
// also when the helper is not running or does not know the session (it
// follows the registry's ENDED event and detaches it anyway). The error of
// any other refusal, for the caller to show.
absl::Status DetachSessionBestEffort(const std::string& runtime_dir, const std::string& session);

}  // namespace lazaret::cli::persist

#endif  // LAZARET_CLIENTS_LAZARET_PERSIST_MOUNT_CLIENT_H_
