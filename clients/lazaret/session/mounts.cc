#include "clients/lazaret/session/mounts.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/common/fs/path.h"

namespace lazaret::cli::session {

namespace pb = ::lazaret::config::v1;

std::string EscapePersistentPath(const std::string& container_path) {
  std::string p = container_path;
  while (!p.empty() && p[0] == '/') p.erase(0, 1);
  std::string out;
  for (unsigned char c : p) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  // "." and ".." as a whole name are never produced: a clean path has no
  // such segment, and a single segment "." would have been refused.
  if (out.empty() || out == "." || out == "..") out = absl::StrCat("%2E", out);
  return out;
}

absl::StatusOr<std::vector<BindMount>> PlanPersistentDirs(
    const std::string& profile_dir, const google::protobuf::RepeatedPtrField<std::string>& dirs) {
  static const char* const kHidesImage[] = {"/",    "/usr",   "/etc",   "/var",    "/bin", "/sbin",
                                            "/lib", "/lib32", "/lib64", "/libx32", "/boot"};
  static const char* const kReservedTrees[] = {"/workspace", "/run/lazaret", "/proc", "/sys",
                                               "/dev"};
  std::vector<BindMount> out;
  for (const std::string& d : dirs) {
    const std::string key = absl::StrCat("persistent_dirs entry '", d, "'");
    if (!fs::IsCleanAbsolutePath(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, " must be a clean absolute path inside the container"));
    }
    for (const char* h : kHidesImage) {
      if (d == h) {
        return absl::FailedPreconditionError(absl::StrCat(
            key,
            ": for now a persistent directory is an empty host directory bound over the "
            "path, which would hide the image's ",
            d,
            " and break the sandbox. Keeping image content (fuse-overlayfs persistence) comes "
            "later; persist a directory the image leaves empty instead (e.g. /root/.cache)."));
      }
    }
    for (const char* r : kReservedTrees) {
      if (fs::IsAtOrUnder(d, r)) {
        return absl::FailedPreconditionError(absl::StrCat(
            key, ": ", r, " belongs to Lazaret or the kernel and cannot be persisted"));
      }
    }
    out.push_back(BindMount{
        absl::StrCat(profile_dir, "/", kSandboxPersistDirName, "/", EscapePersistentPath(d)), d,
        /*read_only=*/false, /*selinux_shared=*/true});
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
    if (b->host.empty() || b->host[0] != '/' || !fs::IsCleanAbsolutePath(b->container)) {
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
  if (!fs::IsCleanAbsolutePath(t.container) || t.container.find(',') != std::string::npos ||
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
