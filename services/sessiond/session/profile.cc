#include "services/sessiond/session/profile.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/sessiond/session/console.h"
#include "services/sessiond/session/mounts.h"
#include "lazaret/config/v1/config.grpc.pb.h"
#include "services/common/service_catalog.h"
#include "services/common/status_util.h"
#include "services/common/unix_server.h"
#include "services/common/profile_paths/host_paths.h"
#include "services/common/profile_paths/profile_check.h"
#include "services/common/profile_paths/resolve_profile.h"

namespace lazaret::cli::session {
namespace {

namespace pb = ::lazaret::config::v1;

}  // namespace

absl::StatusOr<pb::ResolvedProfile> ResolveProfile(const std::string& runtime_dir,
                                                   const std::string& workspace_dir,
                                                   const std::string& explicit_config,
                                                   const std::string& profile) {
  return config::ResolveProfileThroughConfigd(runtime_dir, workspace_dir, explicit_config, profile,
                                              [](const std::string& line) { Say(line); });
}

absl::Status RecheckProfileHostPaths(const pb::ResolvedProfile& profile,
                                     const std::string& runtime_dir,
                                     const std::string& workspace_dir,
                                     const std::string& explicit_config) {
  LAZ_ASSIGN_OR_RETURN(::lazaret::config::HostContext host,
                       ::lazaret::config::HostContextFromEnvironment(runtime_dir));
  return ::lazaret::config::CheckResolvedProfileHostPaths(profile, host, workspace_dir,
                                                          explicit_config);
}

absl::Status CheckNoSymlinkComponents(const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not an absolute path"));
  }
  std::string prefix;
  for (absl::string_view seg : absl::StrSplit(path.substr(1), '/', absl::SkipEmpty())) {
    absl::StrAppend(&prefix, "/", seg);
    struct stat st {};
    if (lstat(prefix.c_str(), &st) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, ": ", std::strerror(errno), " (mount source ", path, ")"));
    }
    if (S_ISLNK(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "mount source ", path, " changed since the configuration was resolved: ", prefix,
          " is now a symlink. Refusing to mount it."));
    }
  }
  return absl::OkStatus();
}

absl::Status RecheckVolumeSources(const pb::ResolvedProfile& profile) {
  for (const BindMount& v : ProfileVolumes(profile)) {
    LAZ_RETURN_IF_ERROR(CheckNoSymlinkComponents(v.host));
  }
  return absl::OkStatus();
}

}  // namespace lazaret::cli::session
