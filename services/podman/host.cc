#include "services/podman/host.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/spawn/subprocess.h"

namespace lazaret::cli {
namespace {

constexpr const char* kRunscLocations[] = {
    "/usr/bin/runsc",
    "/usr/sbin/runsc",
    "/usr/local/bin/runsc",
    "/usr/local/sbin/runsc",
    "/bin/runsc",
    "/sbin/runsc",
    "/run/current-system/sw/bin/runsc",
};

constexpr const char* kRuncLocations[] = {
    "/usr/bin/runc",
    "/usr/sbin/runc",
    "/usr/local/bin/runc",
    "/usr/local/sbin/runc",
    "/bin/runc",
    "/sbin/runc",
    "/run/current-system/sw/bin/runc",
};

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

bool Rootless() { return geteuid() != 0; }

absl::StatusOr<std::string> FindRunsc() {
  if (const char* v = std::getenv(kRunscEnv); v != nullptr && *v != '\0') {
    const std::string path = v;
    if (path[0] != '/') {
      return absl::FailedPreconditionError(
          absl::StrCat(kRunscEnv, "=", path, " must be an absolute path to the runsc binary"));
    }
    if (!IsExecutableFile(path)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the gVisor runtime ", path, " (from ", kRunscEnv,
          ") is not an executable file: ", std::strerror(errno == 0 ? ENOENT : errno)));
    }
    return path;
  }
  for (const char* p : kRunscLocations) {
    if (IsExecutableFile(p)) return std::string(p);
  }
  return absl::FailedPreconditionError(
      "the gVisor runtime runsc is not installed (looked in /usr/bin, /usr/sbin, /usr/local/bin, "
      "...). Install it: apt-get install runsc (or set LAZARET_RUNSC=/path/to/runsc)");
}

absl::StatusOr<std::string> FindRunc() {
  for (const char* p : kRuncLocations) {
    if (IsExecutableFile(p)) return std::string(p);
  }
  return absl::FailedPreconditionError(
      "runc (the network sidecar's runtime) is not installed (looked in /usr/bin, /usr/sbin, "
      "/usr/local/bin, ...). Install it: apt-get install runc");
}

bool ImageExists(const std::string& image) {
  auto r = RunCaptured({"podman", "image", "exists", image}, std::chrono::seconds(60));
  return r.ok() && r->exit_code == 0;
}

std::string MissingImageHint(const std::string& image) {
  if (absl::StartsWith(image, kSidecarRepository) || absl::StartsWith(image, kSandboxRepository)) {
    return absl::StrCat("the image ", image,
                        " is not in this user's podman storage. Build it (no registry needed): "
                        "lazaret image build");
  }
  return absl::StrCat("the image ", image,
                      " is not in this user's podman storage, and Lazaret never pulls "
                      "implicitly. Pull it first: podman pull ",
                      image, "   (or build Lazaret's default image: lazaret image build)");
}

}  // namespace lazaret::cli
