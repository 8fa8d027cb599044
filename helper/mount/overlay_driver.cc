#include "helper/mount/overlay_driver.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "services/common/fs/file.h"
#include "services/common/status_util.h"

namespace lazaret::mounthelper {
namespace {

constexpr char kKernelName[] = "kernel";
constexpr char kFuseName[] = "fuse-overlayfs";
constexpr size_t kMaxRecord = 64;

std::string RecordName(const std::string& base) { return absl::StrCat(base, "_layer"); }

}  // namespace

absl::string_view DriverName(OverlayDriver driver) {
  return driver == OverlayDriver::kKernel ? kKernelName : kFuseName;
}

absl::StatusOr<OverlayPreference> ParsePreference(absl::string_view value) {
  if (value.empty() || value == "auto") return OverlayPreference::kAuto;
  if (value == kKernelName) return OverlayPreference::kKernel;
  if (value == kFuseName) return OverlayPreference::kFuse;
  return absl::InvalidArgumentError(
      absl::StrCat(kOverlayEnv, "='", value.substr(0, 80),
                   "' is not an overlay driver; use auto (the default), kernel or fuse-overlayfs"));
}

absl::StatusOr<std::optional<OverlayDriver>> ReadLayerDriver(const fs::DirFd& profile,
                                                             const std::string& base) {
  const std::string name = RecordName(base);
  const int fd = openat(profile.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    return ErrnoStatus(absl::StrCat("opening the layer record ", name), errno);
  }
  fs::UniqueFd file(fd);
  struct stat st {};
  if (fstat(file.get(), &st) != 0) return ErrnoStatus(absl::StrCat("stat ", name), errno);
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the layer record ", name, " is not a regular file of the mount helper's user; remove it"));
  }
  char buf[kMaxRecord];
  const ssize_t n = read(file.get(), buf, sizeof(buf));
  if (n < 0) return ErrnoStatus(absl::StrCat("reading ", name), errno);
  const absl::string_view text = absl::StripAsciiWhitespace(absl::string_view(buf, static_cast<size_t>(n)));
  if (text == kKernelName) return OverlayDriver::kKernel;
  if (text == kFuseName) return OverlayDriver::kFuse;
  return absl::FailedPreconditionError(
      absl::StrCat("the layer record ", name, " names no overlay driver (kernel or ", kFuseName,
                   "); write the one that made the layer into it, or reset the layer"));
}

absl::Status WriteLayerDriver(const fs::DirFd& profile, const std::string& base,
                              OverlayDriver driver) {
  const std::string name = RecordName(base);
  absl::Status s = fs::WriteFileAtomicAt(profile, name, absl::StrCat(DriverName(driver), "\n"),
                                         0600, fs::Durability::kSync);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("saving the layer record ", name, ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status RemoveLayerDriver(const fs::DirFd& profile, const std::string& base) {
  const std::string name = RecordName(base);
  if (unlinkat(profile.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    return ErrnoStatus(absl::StrCat("removing the layer record ", name), errno);
  }
  return absl::OkStatus();
}

}  // namespace lazaret::mounthelper
