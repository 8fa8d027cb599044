#include "clients/lazaret/images/tags.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/lazaret/images/debian_mirror.h"
#include "clients/lazaret/images/sandbox_inputs.h"
#include "clients/lazaret/images/sidecar_inputs.h"
#include "services/podman/host.h"
#include "services/common/status_util.h"

namespace lazaret::cli::images {
namespace {

std::string ShortHash(const std::string& hex) { return hex.substr(0, kTagHashLength); }

}  // namespace

std::string SandboxTag(const std::string& inputs_hash) {
  return absl::StrCat(kSandboxRepository, ":", kSandboxSuite, "-", ShortHash(inputs_hash));
}

std::string SidecarTag(const std::string& inputs_hash) {
  return absl::StrCat(kSidecarRepository, ":", ShortHash(inputs_hash));
}

absl::StatusOr<std::string> SandboxImageTag(const std::string& images_dir,
                                            const std::string& mirror_override) {
  LAZ_ASSIGN_OR_RETURN(std::vector<std::string> packages, SandboxPackages(images_dir));
  return SandboxTag(SandboxInputsHash(packages, MirrorFor(mirror_override)));
}

absl::StatusOr<std::string> SidecarImageTag(const std::string& libexec_dir) {
  LAZ_ASSIGN_OR_RETURN(std::vector<ImageFile> files,
                       SidecarFiles(absl::StrCat(libexec_dir, "/", kSidecarBinary)));
  LAZ_ASSIGN_OR_RETURN(std::string hash, SidecarInputsHash(files));
  return SidecarTag(hash);
}

}  // namespace lazaret::cli::images
