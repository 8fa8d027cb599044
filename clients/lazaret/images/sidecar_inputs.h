// The sidecar image's inputs: /lazaret-netrouter plus exactly the shared
// libraries `ldd` lists and the loader, and their content hash. Runs in the
// `lazaret` CLI, as the user. ldd's output describes Lazaret's own router
// binary; it is parsed strictly (a library "not found" is an error).
#ifndef LAZARET_CLIENTS_LAZARET_IMAGES_SIDECAR_INPUTS_H_
#define LAZARET_CLIENTS_LAZARET_IMAGES_SIDECAR_INPUTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace lazaret::cli::images {

// The router's file name in the libexec directory and, with a leading
// slash, its path in the image.
inline constexpr char kSidecarBinary[] = "lazaret-netrouter";

// One file of the sidecar image: host source and path inside the image.
struct ImageFile {
  std::string source;  // canonical host path
  std::string dest;    // absolute path in the image
};

// Parses `ldd` output into the libraries and loader it names. Refuses
// "not found" entries.
absl::StatusOr<std::vector<ImageFile>> ParseLddOutput(const std::string& text);

// /lazaret-netrouter plus its ldd closure.
absl::StatusOr<std::vector<ImageFile>> SidecarFiles(const std::string& netrouter);

// Content hash (hex) over every file's destination and bytes.
absl::StatusOr<std::string> SidecarInputsHash(const std::vector<ImageFile>& files);

}  // namespace lazaret::cli::images

#endif  // LAZARET_CLIENTS_LAZARET_IMAGES_SIDECAR_INPUTS_H_
