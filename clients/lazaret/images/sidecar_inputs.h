// The sidecar image's inputs and their content hash. Runs in the `lazaret`
// CLI, as the user. The router is built static (sidecar/CMakeLists.txt), and
// then the image is /lazaret-netrouter alone: the router reads no file of
// the image (no NSS, no resolv.conf, no certificates, no time zone data).
// A dynamically linked router (an older build, or a build by hand) gets
// the shared libraries `ldd` lists and the loader. Whether the binary is
// static is read from its ELF program headers, not from ldd's translated
// messages. Both describe Lazaret's own router binary; they are still
// parsed strictly (bounded reads, a library "not found" is an error).
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

// Whether the ELF executable `path` runs without a program interpreter
// (no PT_INTERP: linked static, or static-pie), so needs no shared library.
// An error when `path` is not a 64-bit little-endian ELF executable.
absl::StatusOr<bool> IsStaticExecutable(const std::string& path);

// /lazaret-netrouter alone when it is static; otherwise it plus its ldd
// closure.
absl::StatusOr<std::vector<ImageFile>> SidecarFiles(const std::string& netrouter);

// Content hash (hex) over every file's destination and bytes.
absl::StatusOr<std::string> SidecarInputsHash(const std::vector<ImageFile>& files);

}  // namespace lazaret::cli::images

#endif  // LAZARET_CLIENTS_LAZARET_IMAGES_SIDECAR_INPUTS_H_
