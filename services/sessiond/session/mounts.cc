#include "services/sessiond/session/mounts.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "services/common/persist_layout.h"
#include "services/common/status_util.h"
#include "services/vocab/host_path.h"

namespace lazaret::cli::session {

namespace pb = ::lazaret::config::v1;

absl::StatusOr<std::vector<BindMount>> PlanPersistentDirs(
    const std::string& profile_dir, const google::protobuf::RepeatedPtrField<std::string>& dirs) {
  std::vector<BindMount> out;
  for (const std::string& d : dirs) {
    LAZ_RETURN_IF_ERROR(CheckPersistentDir(d));
    for (const BindMount& o : out) {
      if (vocab::IsAtOrUnder(d, o.container) || vocab::IsAtOrUnder(o.container, d)) {
        return absl::FailedPreconditionError(
            absl::StrCat("persistent_dirs entries '", o.container, "' and '", d,
                         "' nest: one overlay inside another is refused; keep only the outer one"));
      }
    }
    out.push_back(BindMount{PersistPathsFor(profile_dir, d).merged, d, /*read_only=*/false,
                            /*selinux_shared=*/true});
  }
  return out;
}

std::vector<BindMount> ProfileVolumes(const pb::ResolvedProfile& profile) {
  std::vector<BindMount> out;
  for (const pb::Volume& v : profile.volumes()) {
    BindMount b;
    b.host = v.host();
    b.container = v.container();
    b.read_only = v.access() != pb::MOUNT_ACCESS_READ_WRITE;
    b.selinux_shared = v.selinux() == pb::SELINUX_LABEL_SHARED;
    b.selinux_private = v.selinux() == pb::SELINUX_LABEL_PRIVATE;
    out.push_back(std::move(b));
  }
  return out;
}

bool IsRealDirectory(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::StatusOr<std::vector<std::string>> MountArgs(const Mount& mount) {
  if (const auto* b = std::get_if<BindMount>(&mount)) {
    if (b->host.empty() || b->host[0] != '/' || !vocab::IsCleanAbsolutePath(b->container)) {
      return absl::InvalidArgumentError(absl::StrCat("mount ", b->host, " -> ", b->container,
                                                     ": both paths must be absolute and clean"));
    }
    if (b->host.find(':') != std::string::npos || b->container.find(':') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("mount ", b->host, " -> ", b->container,
                       ": a path with ':' cannot be passed to podman -v; rename it"));
    }
    std::string opts = b->read_only ? "ro" : "rw";
    if (b->selinux_private) {
      opts += ",Z";
    } else if (b->selinux_shared) {
      opts += ",z";
    }
    return std::vector<std::string>{
        absl::StrCat("--volume=", b->host, ":", b->container, ":", opts)};
  }
  const auto& t = std::get<TmpfsMount>(mount);
  if (!vocab::IsCleanAbsolutePath(t.container) || t.container.find(',') != std::string::npos ||
      t.container.find('=') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("tmpfs mount at '", t.container, "': not a path podman --mount accepts"));
  }
  for (char c : t.mode) {
    if (c < '0' || c > '7') return absl::InvalidArgumentError("tmpfs mode must be octal");
  }
  return std::vector<std::string>{
      absl::StrCat("--mount=type=tmpfs,destination=", t.container, ",tmpfs-mode=", t.mode)};
}

}  // namespace lazaret::cli::session
