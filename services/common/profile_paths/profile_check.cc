#include "services/common/profile_paths/profile_check.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "services/vocab/host_path.h"

namespace lazaret::config {
namespace {

absl::Status Refuse(const absl::Status& st) {
  return absl::PermissionDeniedError(absl::StrCat(
      "refusing the profile lazaret-configd returned: ", st.message(),
      ". Nothing was started. Check the configuration with `lazaret config show`; if it looks "
      "right there, lazaret-configd may be compromised - stop Lazaret (lazaret down)"));
}

// Absolute, clean and canonical as far as it exists; not inside any of
// `sensitive` (ancestors of a sensitive path are allowed: a directory whose
// children only are mounted) and not inside the workspace.
absl::Status CheckLazaretDir(const std::string& path, absl::string_view what,
                             const std::vector<SensitivePath>& sensitive,
                             const std::string& workspace_dir) {
  if (absl::Status st = CheckFutureMountSource(path, what, {}); !st.ok()) return st;
  if (absl::Status st = CheckNotSensitive(path, sensitive, /*refuse_ancestors=*/false); !st.ok()) {
    return absl::PermissionDeniedError(absl::StrCat(what, " ", st.message()));
  }
  if (!workspace_dir.empty() && vocab::IsAtOrUnder(path, workspace_dir)) {
    return absl::PermissionDeniedError(absl::StrCat(what, " \"", path,
                                                    "\" is inside the workspace ", workspace_dir,
                                                    ", which the agent can write"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckResolvedProfileHostPaths(const v1::ResolvedProfile& profile,
                                           const HostContext& host,
                                           const std::string& workspace_dir,
                                           const std::string& explicit_config) {
  const std::vector<SensitivePath> sensitive = SensitivePaths(host, workspace_dir);
  const std::string& name = profile.name();
  if (!vocab::CheckOneComponent(name).ok()) {
    return Refuse(absl::InvalidArgumentError(
        absl::StrCat("profile name \"", name, "\" is not a single path component")));
  }
  const std::string& data_root = profile.data_root();
  if (absl::Status st = CheckLazaretDir(data_root, "data_root", sensitive, workspace_dir);
      !st.ok()) {
    return Refuse(st);
  }
  const std::string expected_dir = absl::StrCat(data_root == "/" ? "" : data_root, "/", name);
  if (profile.profile_dir() != expected_dir) {
    return Refuse(absl::PermissionDeniedError(
        absl::StrCat("profile_dir \"", profile.profile_dir(), "\" is not ", expected_dir)));
  }
  if (absl::Status st = CheckLazaretDir(expected_dir, "profile_dir", sensitive, workspace_dir);
      !st.ok()) {
    return Refuse(st);
  }
  if (absl::Status st = CheckNotSensitive(expected_dir, sensitive, /*refuse_ancestors=*/true);
      !st.ok()) {
    return Refuse(absl::PermissionDeniedError(absl::StrCat("profile_dir ", st.message())));
  }

  std::vector<AgentWritableDir> writable;
  if (!workspace_dir.empty()) writable.push_back({workspace_dir, "the workspace"});
  writable.push_back({data_root, "data_root (profile directories are mounted read-write)"});
  for (const v1::Volume& v : profile.volumes()) {
    const std::string what = absl::StrCat("volume ", v.host(), " -> ", v.container());
    if (absl::Status st = CheckMountSource(v.host(), what, sensitive); !st.ok()) return Refuse(st);
    if (absl::Status st = CheckVolumePlacement(v.host(), data_root, expected_dir); !st.ok()) {
      return Refuse(absl::PermissionDeniedError(absl::StrCat(what, ": ", st.message())));
    }
    if (absl::StatusOr<std::string> c = CheckContainerPath(v.container()); !c.ok()) {
      return Refuse(absl::InvalidArgumentError(
          absl::StrCat(what, ": the container path ", c.status().message())));
    }
    if (v.access() != v1::MOUNT_ACCESS_READ_ONLY) {
      writable.push_back({v.host(), absl::StrCat("the read-write volume ", what)});
    }
  }

  if (const std::string& socket_dir = profile.escalation().socket_dir(); !socket_dir.empty()) {
    if (absl::Status st = CheckLazaretDir(socket_dir, "escalation.socket_dir", {}, workspace_dir);
        !st.ok()) {
      return Refuse(st);
    }
    if (vocab::IsAtOrUnder(socket_dir, data_root)) {
      return Refuse(absl::PermissionDeniedError(
          absl::StrCat("escalation.socket_dir \"", socket_dir, "\" is inside data_root")));
    }
  }

  absl::StatusOr<std::vector<TrustedPath>> trusted = TrustedPaths(host, explicit_config);
  if (!trusted.ok()) return Refuse(trusted.status());
  if (absl::Status st = CheckTrustedPathsNotAgentWritable(*trusted, writable); !st.ok()) {
    return Refuse(st);
  }
  return absl::OkStatus();
}

}  // namespace lazaret::config
