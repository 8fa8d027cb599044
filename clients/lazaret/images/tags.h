// The tags of Lazaret's local images: a content hash of the inputs, so a
// changed input gives a new tag and an unchanged one is reused without
// building. Runs in the `lazaret` CLI (`lazaret image`, `lazaret doctor`),
// as the user.
#ifndef LAZARET_CLIENTS_LAZARET_IMAGES_TAGS_H_
#define LAZARET_CLIENTS_LAZARET_IMAGES_TAGS_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace lazaret::cli::images {

// How many hex digits of the hash go into a tag.
inline constexpr size_t kTagHashLength = 16;

// localhost/lazaret-sandbox:trixie-<hash prefix> and
// localhost/lazaret-sidecar:<hash prefix> for an inputs hash.
std::string SandboxTag(const std::string& inputs_hash);
std::string SidecarTag(const std::string& inputs_hash);

// The tags a build of the current inputs gives.
absl::StatusOr<std::string> SandboxImageTag(const std::string& images_dir,
                                            const std::string& mirror_override);
absl::StatusOr<std::string> SidecarImageTag(const std::string& libexec_dir);

}  // namespace lazaret::cli::images

#endif  // LAZARET_CLIENTS_LAZARET_IMAGES_TAGS_H_
